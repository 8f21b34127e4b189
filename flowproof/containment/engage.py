"""One flow's egress containment: whether the flow engages it, the tier it gets, and the launcher
its agent starts through.

A flow engages egress when it declares `agent.allow_egress` or has an `assert_no_egress` step;
any other flow runs exactly as before (the plain launcher, no filter, no cost). An engaged flow
gets the tier this host and driver can give: a `command:` agent on a Linux host that passed the
probe is contained; a `url:` service (started by someone else) and every other host are not,
and say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from flowproof.assertions.egress import KIND, EgressEvidence
from flowproof.containment import engages_egress
from flowproof.containment.findings import EgressSummary, Findings, not_contained
from flowproof.containment.policy import FORMS, EntryError, Policy, parse_entry
from flowproof.core.errors import SpecError
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve

URL_SERVICE = (
    "a url: service is started outside flowproof, so flowproof cannot contain it; "
    "only a command: agent can be contained"
)

NOT_ENGAGED = "not engaged (the flow declares neither allow_egress nor assert_no_egress)"


@dataclass(slots=True)
class EgressSession:
    """The containment of one flow's agent run."""

    tier: str
    contained: bool
    entries: tuple[str, ...]
    """allow_egress as the spec wrote it (unresolved), for messages."""
    asserted: bool
    """Whether the flow has an assert_no_egress step."""
    policy: Policy | None = None
    findings: Findings = field(default_factory=Findings)
    unresolved: tuple[str, ...] = ()
    """Declared host names that resolved to no address when the agent started."""

    def evidence(self) -> EgressEvidence:
        blocked = self.findings.blocked_destinations() if self.contained else ()
        return EgressEvidence(self.contained, self.tier, blocked)

    def summary(self) -> EgressSummary:
        findings = self.findings
        if not self.contained:
            return EgressSummary(self.tier, False, ())
        return EgressSummary(
            self.tier,
            True,
            findings.blocked_destinations(),
            findings.fs_report(),
            tuple(findings.faults),
        )

    def warnings(self) -> list[str]:
        """allow_egress without assert_no_egress, where nothing enforced it: say so; and a
        declared name that resolved to nothing."""
        found = [
            f"allow_egress names {host}, which resolved to no address when the agent started; "
            "a connection to it is refused unless it resolves when the agent connects"
            for host in self.unresolved
        ]
        if self.contained or self.asserted or not self.entries:
            return found
        return found + [
            f"allow_egress ({', '.join(self.entries)}) was not enforced: this run was "
            f"{self.tier}, so the agent could reach anything; add the step "
            "`- assert_no_egress` to make the flow fail where containment is unavailable"
        ]


IN_PROCESS = (
    "an in-process agent runs inside flowproof's own process, which flowproof cannot contain; "
    "only a command: agent can be contained"
)


def uncontained_session(loaded: LoadedSpec, reason: str) -> EgressSession | None:
    """The session of a flow whose agent nothing can contain (None when it engages none)."""
    if not engages_egress(loaded):
        return None
    asserted = any(step.kind == KIND for step in loaded.assertions)
    return EgressSession(
        not_contained(reason), False, tuple(loaded.spec.agent.allow_egress), asserted
    )


def egress_session(loaded: LoadedSpec, environ: Mapping[str, str]) -> EgressSession | None:
    """The flow's containment, or None when it engages none. `${VAR}` in an entry resolves
    here; one that resolves to something malformed is a SpecError at the entry's line."""
    if not engages_egress(loaded):
        return None
    agent = loaded.spec.agent
    entries = tuple(agent.allow_egress)
    asserted = any(step.kind == KIND for step in loaded.assertions)
    if agent.command is None:
        return uncontained_session(loaded, URL_SERVICE)
    rules = []
    for index, text in enumerate(entries):
        resolved = resolve(text, environ)
        try:
            rules.append(parse_entry(resolved))
        except EntryError:
            # The resolved value is not quoted: it is the destination the spec keeps unwritten.
            line = loaded.line_of("agent", "allow_egress", index)
            raise SpecError(
                loaded.path,
                line,
                f"agent.allow_egress[{index}] '{text}' does not resolve to {FORMS}",
                "fix the variable's value in the environment, or the entry",
            ) from None
    from flowproof.containment.probe import capability

    found = capability()
    return EgressSession(found.tier, found.contained, entries, asserted, Policy(tuple(rules), {}))

"""One flow's egress containment: whether the flow engages it, the tier it gets, and the launcher
its agent starts through.

A flow engages egress when it declares `agent.allow_egress` or has an `assert_no_egress` step;
any other flow runs exactly as before (the plain launcher, no filter, no cost). An engaged flow
gets the tier this host and driver can give: a `command:` agent on a Linux host that passed the
probe is contained; a `url:` service (started by someone else) and every other host are not,
and say why.

The engine reads all of that from the spec (engine/egress.py); containment gets the demand and
the resolved policy, never the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flowproof.assertions.egress import EgressEvidence
from flowproof.containment.findings import EgressSummary, Findings, not_contained
from flowproof.containment.policy import Policy

URL_SERVICE = (
    "a url: service is started outside flowproof, so flowproof cannot contain it; "
    "only a command: agent can be contained"
)

NOT_ENGAGED = "not engaged (the flow declares neither allow_egress nor assert_no_egress)"


@dataclass(frozen=True, slots=True)
class EgressDemand:
    """What a flow that engages egress containment asks of it."""

    entries: tuple[str, ...]
    """allow_egress as the spec wrote it (unresolved), for messages."""
    asserted: bool
    """Whether the flow has an assert_no_egress step."""


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


def uncontained_session(demand: EgressDemand, reason: str) -> EgressSession:
    """The session of a flow whose agent nothing can contain."""
    return EgressSession(not_contained(reason), False, demand.entries, demand.asserted)


def egress_session(demand: EgressDemand, policy: Policy) -> EgressSession:
    """The session of a `command:` agent: contained under `policy` where this host can (the
    probe says), and otherwise not, saying why."""
    from flowproof.containment.probe import capability

    found = capability()
    return EgressSession(found.tier, found.contained, demand.entries, demand.asserted, policy)

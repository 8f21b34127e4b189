"""What one flow asks of egress containment, read from its spec: whether it engages it at all,
the allow-list with its `${VAR}` resolved, and the session its agent starts under.

A flow engages egress when it declares `agent.allow_egress` or has an `assert_no_egress` step;
any other flow (most) loads none of containment's machinery to find that out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from flowproof.assertions.egress import KIND
from flowproof.core.errors import SpecError
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve

if TYPE_CHECKING:  # loaded by a flow that engages containment: most do not
    from flowproof.containment.engage import EgressDemand, EgressSession
    from flowproof.containment.policy import Policy


def engages_egress(loaded: LoadedSpec) -> bool:
    """Whether the flow declares `agent.allow_egress` or has an `assert_no_egress` step."""
    return bool(loaded.spec.agent.allow_egress) or any(
        step.kind == KIND for step in loaded.assertions
    )


def flow_egress(loaded: LoadedSpec, environ: Mapping[str, str]) -> EgressSession | None:
    """The flow's containment, or None when it engages none. A `url:` service is started by
    someone else and is never contained; a `command:` agent is, where the host can."""
    from flowproof.containment.engage import URL_SERVICE, egress_session, uncontained_session

    demand = _demand(loaded)
    if demand is None:
        return None
    if loaded.spec.agent.command is None:
        return uncontained_session(demand, URL_SERVICE)
    return egress_session(demand, allowed(loaded, environ))


def uncontained_egress(loaded: LoadedSpec, reason: str) -> EgressSession | None:
    """The session of a flow whose agent nothing can contain (None when it engages none)."""
    from flowproof.containment.engage import uncontained_session

    demand = _demand(loaded)
    return None if demand is None else uncontained_session(demand, reason)


def allowed(loaded: LoadedSpec, environ: Mapping[str, str]) -> Policy:
    """`agent.allow_egress` as a policy, `${VAR}` resolved here; an entry that resolves to
    something malformed is a SpecError at its line, without the value (which the spec keeps
    unwritten on purpose)."""
    from flowproof.containment.policy import FORMS, EntryError, Policy, parse_entry

    rules = []
    for index, text in enumerate(loaded.spec.agent.allow_egress):
        try:
            rules.append(parse_entry(resolve(text, environ)))
        except EntryError:
            raise SpecError(
                loaded.path,
                loaded.line_of("agent", "allow_egress", index),
                f"agent.allow_egress[{index}] '{text}' does not resolve to {FORMS}",
                "fix the variable's value in the environment, or the entry",
            ) from None
    return Policy(tuple(rules), {})


def _demand(loaded: LoadedSpec) -> EgressDemand | None:
    if not engages_egress(loaded):
        return None
    from flowproof.containment.engage import EgressDemand

    asserted = any(step.kind == KIND for step in loaded.assertions)
    return EgressDemand(tuple(loaded.spec.agent.allow_egress), asserted)

"""assert_no_egress: certify that the agent reached nothing the flow did not declare. Pure.

A capability claim, never a vacuous pass: the step passes only when containment was ENFORCED
for this run and the set of undeclared destinations the agent attempted is empty. Where
nothing contained the agent (a `url:` service, macOS, Windows, a kernel without the features,
flowproof nested under another notifier) it fails with "cannot certify", whatever the agent
did, and there is no flag that turns that into a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowproof.assertions.evaluate import StepRef, Verdict, step_verdict
from flowproof.core.errors import StepError
from flowproof.core.words import plural

KIND = "assert_no_egress"
_SHOWN = 5
"""Blocked destinations named in a failure before the rest are counted."""


@dataclass(frozen=True, slots=True)
class NoEgressAssertion:
    @property
    def kind(self) -> str:
        return KIND

    def __str__(self) -> str:
        return KIND


def parse_no_egress(text: str) -> NoEgressAssertion:
    if text.strip():
        raise StepError(
            f"assert_no_egress takes no text (got '{text.strip()}'); write `- assert_no_egress` "
            "and list what the agent may reach in agent.allow_egress"
        )
    return NoEgressAssertion()


@dataclass(frozen=True, slots=True)
class EgressEvidence:
    """What the run's containment enforced and saw."""

    contained: bool
    """True only when this run's agent ran under the filter and its supervisor."""
    tier: str
    """`contained (linux seccomp)` or `not contained (<reason>)`."""
    blocked: tuple[str, ...] = ()
    """Each distinct undeclared attempt, in the order first seen: `connect 203.0.113.7:8080`."""


NOT_ENGAGED = EgressEvidence(False, "not contained (the agent did not run under containment)")


def check_no_egress(
    ref: StepRef, assertion: NoEgressAssertion, evidence: EgressEvidence | None
) -> Verdict:
    found = evidence or NOT_ENGAGED
    if not found.contained:
        return step_verdict(ref, KIND, str(assertion), f"cannot certify: {found.tier}")
    if not found.blocked:
        return step_verdict(ref, KIND, str(assertion), None)
    count = len(found.blocked)
    shown = ", ".join(found.blocked[:_SHOWN])
    more = f" and {count - _SHOWN} more" if count > _SHOWN else ""
    return step_verdict(
        ref,
        KIND,
        str(assertion),
        f"the agent attempted {plural(count, 'undeclared destination')}, refused: "
        f"{shown}{more}; declare each one it may reach in agent.allow_egress",
    )

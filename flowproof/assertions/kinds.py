"""TEMPORARY shim until the step-kind registry lands (branch i9-steps)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepKind:
    name: str
    control_lane: str


_LANES = {
    "assert_tool_call": "tool_call",
    "assert_no_tool_call": "no_tool_call",
    "assert": "reply",
    "assert_no_secret_leak": "secret_leak",
}


def step_kind(name: str) -> StepKind:
    return StepKind(name, _LANES[name])

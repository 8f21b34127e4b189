"""The judge: steps grouped by evaluator through the step-kind registry, verdicts in spec order."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import ToolCall, Trajectory
from flowproof.core.errors import SpecError
from flowproof.engine.context import flow_context
from flowproof.engine.judge import judge
from flowproof.spec.load import LoadedSpec, load_spec

SPEC = """\
name: Booking
app: agent
agent:
  command: python3 agent.py
strict: true
steps:
  - prompt: Book me a flight
  - assert_no_secret_leak: DB_PASSWORD
  - assert_tool_call: search_flights
  - assert: reply contains booked
  - assert_no_tool_call: transfer_funds
"""


def load(tmp_path: Path, text: str) -> LoadedSpec:
    (tmp_path / "specs").mkdir(exist_ok=True)
    path = tmp_path / "specs" / "booking.yaml"
    path.write_text(textwrap.dedent(text))
    return load_spec(path)


def call(name: str, arguments: dict[str, str]) -> ToolCall:
    return ToolCall(name, arguments, json.dumps(arguments), 0)


TRAJECTORY = Trajectory(
    (call("search_flights", {}), call("create_booking", {"id": "KQ311"})), "You are booked."
)
BODIES = (Body("turn 1 request", {"content": "my password is pw-1"}),)


def test_verdicts_come_in_spec_order_with_strict_last(tmp_path: Path) -> None:
    loaded = load(tmp_path, SPEC)
    verdicts = judge(flow_context(loaded, None, {"DB_PASSWORD": "pw-1"}), TRAJECTORY, BODIES)
    assert [(v.kind, v.passed) for v in verdicts] == [
        ("assert_no_secret_leak", False),
        ("assert_tool_call", True),
        ("assert", True),
        ("assert_no_tool_call", True),
        ("strict", False),
    ]
    strict = verdicts[-1]
    assert strict.step is None
    assert (strict.at.spec, strict.at.line) == (str(loaded.path), 5)
    assert strict.message == (
        "booking.yaml:5: strict: calls not listed by any assert_tool_call: "
        "create_booking (call 2 of 2)"
    )


def test_strict_judges_a_flow_without_assertion_steps(tmp_path: Path) -> None:
    loaded = load(tmp_path, SPEC.split("  - assert_no_secret_leak")[0])
    [verdict] = judge(flow_context(loaded, None, {}), TRAJECTORY, ())
    assert verdict.kind == "strict" and not verdict.passed


def test_an_unset_variable_in_a_value_is_a_spec_error_at_its_line(tmp_path: Path) -> None:
    loaded = load(tmp_path, SPEC.replace("reply contains booked", "reply contains ${CITY}"))
    with pytest.raises(SpecError) as raised:
        judge(flow_context(loaded, None, {"DB_PASSWORD": "x"}), TRAJECTORY, BODIES)
    assert str(raised.value) == (
        f"{loaded.path}:10: step 4 (assert): ${{CITY}} is used by the spec but is not set in "
        "the environment; set it before running flowproof, or take the reference out of the step"
    )

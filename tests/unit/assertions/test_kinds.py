"""The step-kind registry: one entry per step key, read by the loader, the judge and docgen."""

from __future__ import annotations

import pytest

from flowproof.assertions.evaluate import SpecLine, StepRef
from flowproof.assertions.grammar import ReplyAssertion, ToolCallAssertion
from flowproof.assertions.kinds import (
    MODEL_LANE,
    AssertToolCall,
    Evidence,
    StepKind,
    parse_step,
    step_kind,
    step_kinds,
)
from flowproof.assertions.secrets import Body, SecretLeakAssertion
from flowproof.assertions.trajectory import Trajectory
from flowproof.core.errors import GrammarError


def test_the_kinds_in_definition_order_with_their_lanes() -> None:
    assert [(k.name, k.judges, k.control_lane) for k in step_kinds()] == [
        ("assert_tool_call", MODEL_LANE, "tool_call"),
        ("assert_no_tool_call", MODEL_LANE, "no_tool_call"),
        ("assert", MODEL_LANE, "reply"),
        ("assert_no_secret_leak", MODEL_LANE, "secret_leak"),
        ("assert_no_egress", "egress", "egress"),
    ]


def test_the_trajectory_kinds_share_one_evaluator() -> None:
    evaluators = {k.name: k.evaluator for k in step_kinds()}
    assert evaluators["assert_tool_call"] is evaluators["assert_no_tool_call"]
    assert evaluators["assert_tool_call"] is evaluators["assert"]
    assert evaluators["assert_no_secret_leak"] is not evaluators["assert"]


@pytest.mark.parametrize(
    ("name", "text", "compiled"),
    [
        ("assert_tool_call", "search_flights", ToolCallAssertion("search_flights")),
        ("assert_no_tool_call", "transfer", ToolCallAssertion("transfer", forbid=True)),
        ("assert", "reply is done", ReplyAssertion("done", "is")),
        ("assert_no_secret_leak", "A, B", SecretLeakAssertion(("A", "B"))),
    ],
)
def test_each_kind_parses_its_text(name: str, text: str, compiled: object) -> None:
    step = parse_step(name, text)
    assert step == compiled
    assert step.kind == name


def test_an_unknown_kind_lists_them_all() -> None:
    with pytest.raises(GrammarError) as raised:
        step_kind("assert_tool")
    assert str(raised.value) == (
        "unknown assertion step 'assert_tool'; expected one of: assert_tool_call, "
        "assert_no_tool_call, assert, assert_no_secret_leak, assert_no_egress"
    )


def test_a_duplicate_name_raises_naming_both_classes() -> None:
    with pytest.raises(TypeError) as raised:

        class Again(StepKind):
            name = "assert_tool_call"
            control_lane = "tool_call"

    assert str(raised.value) == (
        "step kind 'assert_tool_call' is declared by both AssertToolCall and Again"
    )
    assert step_kind("assert_tool_call") is AssertToolCall


def test_a_kind_that_declares_too_little_is_refused_when_defined() -> None:
    with pytest.raises(TypeError) as raised:

        class Half(StepKind):
            name = "assert_half"
            control_lane = "half"

    assert str(raised.value) == "step kind 'assert_half' (Half) declares no docs, evaluator"
    with pytest.raises(GrammarError):
        step_kind("assert_half")


def test_a_subclass_without_a_name_is_not_registered() -> None:
    before = step_kinds()

    class Helper(StepKind):
        control_lane = "none"

    assert step_kinds() == before


def test_evaluators_judge_through_the_evidence() -> None:
    evidence = Evidence(
        trajectory=Trajectory((), "Booked."),
        bodies=(Body("turn 1 request", {"content": "pw-1"}),),
        secrets={"PW": "pw-1"},
        resolve=str,
        strict=SpecLine("specs/booking.yaml", 7),
    )
    reply = [(StepRef(2, "specs/booking.yaml", 10), parse_step("assert", "reply contains Booked"))]
    [verdict] = step_kind("assert").evaluator(reply, evidence)
    assert verdict.passed and verdict.kind == "assert"
    leak = [(StepRef(3, "specs/booking.yaml", 11), parse_step("assert_no_secret_leak", "PW"))]
    [verdict] = step_kind("assert_no_secret_leak").evaluator(leak, evidence)
    assert verdict.message == (
        "step 3 (booking.yaml:11): assert_no_secret_leak PW — the value of PW appeared in "
        "turn 1 request at content"
    )
    assert (verdict.kind, verdict.observed) == (
        "assert_no_secret_leak",
        "the value of PW appeared in turn 1 request at content",
    )


def test_every_kind_has_docs_headed_by_its_name() -> None:
    for kind in step_kinds():
        assert kind.docs.startswith(f"## {kind.name}"), kind.name


def test_the_evidence_repr_never_shows_a_secret_value() -> None:
    from flowproof.assertions.kinds import Evidence
    from flowproof.assertions.trajectory import Trajectory

    evidence = Evidence(Trajectory((), None), (), {"DB_PASSWORD": "hunter2"}, str, None)
    assert "hunter2" not in repr(evidence)
    assert evidence.secrets["DB_PASSWORD"] == "hunter2"

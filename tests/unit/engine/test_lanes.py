"""Lanes: one registry of lane kinds, and the model lane read through it."""

from __future__ import annotations

import pytest

from flowproof.core.errors import TraceError
from flowproof.dialects.base import Dialect
from flowproof.engine import lanes
from flowproof.engine.lanes import LaneKind
from flowproof.trace.model import Lane, Trace, Turn

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSE = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}


def test_a_lane_kind_claimed_twice_is_refused_naming_both_classes() -> None:
    with pytest.raises(TypeError) as raised:

        class Again(LaneKind):
            kind = "model"

    assert str(raised.value) == "lane kind 'model' is declared by both ModelLane and Again"


def test_a_dialect_claimed_twice_is_refused_naming_both_classes() -> None:
    with pytest.raises(TypeError) as raised:

        class Twin(Dialect):
            name = "openai_chat"

    assert str(raised.value) == "dialect 'openai_chat' is declared by both OpenAIChat and Twin"


def test_the_model_lane_gives_bodies_timeline_and_trajectory() -> None:
    served = (Lane("model", (Turn("openai_chat", REQUEST, RESPONSE),)),)
    assert [body.label for body in lanes.all_bodies(served)] == [
        "turn 1 request",
        "turn 1 response",
    ]
    (row,) = lanes.timeline(served)
    assert (row.lane, row.turn, row.known, row.text) == ("model", 1, True, "hello")
    assert lanes.trajectory(served).reply == "hello"


def test_a_lane_of_an_unknown_kind_or_dialect_is_refused() -> None:
    with pytest.raises(TraceError, match="no lane kind 'bedrock_converse' in this flowproof"):
        lanes.all_bodies((Lane("bedrock_converse.x", ()),))
    trace = Trace.from_turns((Turn("bedrock_converse", REQUEST, RESPONSE),), "9")
    with pytest.raises(TraceError, match="t.json: turn 1 has unknown dialect 'bedrock_converse'"):
        lanes.check_lanes(trace, "t.json")


def test_a_trace_compared_with_itself_has_no_changes() -> None:
    same = Trace.from_turns((Turn("openai_chat", REQUEST, RESPONSE),), "9")
    assert lanes.trace_changes(same, same) == []

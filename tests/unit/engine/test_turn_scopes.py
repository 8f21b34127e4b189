"""A conversation turn's scope: only its model turns, numbered as in the whole flow."""

from __future__ import annotations

from typing import Any

from flowproof.core.lanes import MODEL_LANE
from flowproof.engine.lanes import turn_scopes
from flowproof.trace.model import Lane, Turn


def turn(user_turn: int | None, response: dict[str, Any]) -> Turn:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    return Turn("openai_chat", request, response, conversation_turn=user_turn)


def reply(text: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def call(name: str) -> dict[str, Any]:
    function = {"name": name, "arguments": '{"id": 1}'}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "function": function}],
    }
    return {"choices": [{"message": message}]}


def test_each_turn_sees_its_own_calls_and_reply_numbered_as_in_the_flow() -> None:
    lanes = (
        Lane(MODEL_LANE, (turn(1, call("search")), turn(1, reply("found")), turn(2, call("book")))),
    )
    scopes = turn_scopes(lanes)
    assert sorted(scopes) == [1, 2]
    first, second = scopes[1].trajectory, scopes[2].trajectory
    assert [(c.name, c.turn) for c in first.tool_calls] == [("search", 0)]
    assert first.reply == "found"
    assert [(c.name, c.turn) for c in second.tool_calls] == [("book", 2)]
    assert second.reply is None
    assert second.reply_absent_reason == "its last turn (turn 3) is a tool call (book), not a reply"
    assert [body.label for body in scopes[2].bodies] == ["turn 3 request", "turn 3 response"]


def test_a_single_turn_flow_has_no_scopes() -> None:
    assert turn_scopes((Lane(MODEL_LANE, (turn(None, reply("hi")),)),)) == {}

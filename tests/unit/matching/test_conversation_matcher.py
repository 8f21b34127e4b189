"""Turn-scoped matching: a conversation's recorded turns are served only within the user turn
they were recorded in, and a replay that leaves the recording's shape is named by its turn."""

from __future__ import annotations

import asyncio
from typing import Any

from flowproof.dialects import dialect_named
from flowproof.live.conversation import Conversation
from flowproof.live.traffic import Traffic
from flowproof.matching.match import ConversationMatcher, TurnMatcher, matcher_for
from flowproof.proxy.backend import ModelCall
from flowproof.proxy.replay import ReplayBackend
from flowproof.trace.model import Turn


def request(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def reply(text: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def call(name: str) -> dict[str, Any]:
    function = {"name": name, "arguments": "{}"}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "function": function}],
    }
    return {"choices": [{"message": message}]}


def turn(text: str, user_turn: int, response: Any = None) -> Turn:
    return Turn("openai_chat", request(text), response or reply(text), conversation_turn=user_turn)


def test_a_request_is_served_only_within_its_user_turn() -> None:
    # The same request recorded in both user turns: each user turn claims its own.
    turns = [turn("same", 1), turn("same", 2), turn("other", 2)]
    current = [1]
    matcher = ConversationMatcher(turns, lambda: current[0])
    assert matcher.claim("openai_chat", request("other")) is None  # turn 2's, not turn 1's
    assert matcher.claim("openai_chat", request("same")) == 0
    assert matcher.claim("openai_chat", request("same")) is None  # turn 1 has no second
    current[0] = 2
    assert matcher.claim("openai_chat", request("same")) == 1
    assert matcher.claim("openai_chat", request("other")) == 2
    assert matcher.served == 3 and matcher.unserved() == []
    assert (matcher.recorded_in(1), matcher.recorded_in(2), matcher.recorded_in(3)) == (1, 2, 0)


def test_a_single_turn_trace_keeps_the_plain_matcher() -> None:
    plain = [Turn("openai_chat", request("a"), reply("a"))]
    assert isinstance(matcher_for(plain, (), lambda: 1), TurnMatcher)
    assert isinstance(matcher_for([turn("a", 1)], (), lambda: 1), ConversationMatcher)
    assert isinstance(matcher_for([turn("a", 1)]), TurnMatcher)  # no conversation to scope by


def test_a_reply_moves_the_conversation_on_and_a_tool_call_does_not() -> None:
    conversation = Conversation(("first", "second"))
    assert conversation.tag(turn("a", 0, call("search"))).conversation_turn == 1
    assert conversation.current == 1
    assert conversation.tag(turn("b", 0)).conversation_turn == 1
    assert conversation.current == 2
    assert conversation.tag(turn("c", 0)).conversation_turn == 2
    assert conversation.tag(turn("d", 0)).conversation_turn == 2  # the last keeps the rest
    assert conversation.requests == [2, 2] and conversation.unanswered() is None


def test_an_agent_that_never_reaches_a_turn_is_named_by_it() -> None:
    conversation = Conversation(("first", "second", "third"))
    conversation.tag(turn("a", 0, call("search")))
    assert conversation.unanswered() == (
        "the agent ended before conversation turn 2 was handed to it: turn 1 never got a "
        "reply (a model response with no tool call)"
    )
    conversation.tag(turn("b", 0))
    conversation.tag(turn("c", 0))
    assert conversation.current == 3
    assert conversation.unanswered() == (
        "the agent ended without answering conversation turn 3: it made no model request "
        "after the turn was written on its stdin"
    )


def replayed(recorded: list[Turn], sent: list[str]) -> Traffic:
    traffic = Traffic()
    traffic.conversation = Conversation(("first", "second"))
    conversation = traffic.conversation
    backend = ReplayBackend(
        ConversationMatcher(recorded, lambda: conversation.current), {}, traffic
    )
    dialect = dialect_named("openai_chat")
    assert dialect is not None

    async def run() -> None:
        for text in sent:
            traffic.requests.append(("POST", "/v1/chat/completions", "openai_chat"))
            answered = await backend.answer(ModelCall(dialect, request(text), {}))
            if answered.turn is not None:
                traffic.add("model", answered.turn)

    asyncio.run(run())
    return traffic


RECORDED = [
    turn("find", 1, call("search")),
    turn("found", 1),
    turn("book", 2, call("book")),
    turn("booked", 2),
]


def test_a_divergence_names_the_user_turn_and_the_request_in_it() -> None:
    traffic = replayed(RECORDED, ["find", "found", "book", "booked?"])
    assert traffic.divergence is not None
    assert traffic.divergence.render().splitlines()[0] == (
        "turn 2, request 2 (request 4 of the flow) matches no recorded request of turn 2 "
        "(compared with recorded turn 4)"
    )


def test_an_extra_request_in_a_turn_is_a_shape_change() -> None:
    traffic = replayed(RECORDED, ["find", "found", "book", "booked", "booked"])
    assert traffic.divergence is not None
    assert traffic.divergence.render() == (
        "conversation shape changed at turn 2: recorded 2 requests, replayed 3"
    )


def test_turn_2s_request_is_not_served_in_turn_1() -> None:
    traffic = replayed(RECORDED, ["find", "book"])
    assert traffic.divergence is not None
    assert traffic.divergence.headline.startswith("turn 1, request 2 (request 2 of the flow)")

"""The tool exchange each dialect reads, and the one substitution / latest-results / text-joining
implementation in dialects/base.py that serves all three."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import ToolMock
from flowproof.dialects import dialect_named
from flowproof.dialects.base import (
    CallMade,
    Dialect,
    ModelTurn,
    ResultSlot,
    ToolEvent,
    join_text,
)

CHAT = dialect_named("openai_chat")
MESSAGES = dialect_named("anthropic_messages")
RESPONSES = dialect_named("openai_responses")

Turns = list[list[tuple[str, str]]]
"""Model turns, each the (call id, tool) pairs it asked for; every call gets `real <id>`."""


def chat_conversation(turns: Turns) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for calls in turns:
        tool_calls = [
            {"id": i, "type": "function", "function": {"name": t, "arguments": "{}"}}
            for i, t in calls
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
        messages += [{"role": "tool", "tool_call_id": i, "content": f"real {i}"} for i, _ in calls]
    return {"model": "m", "messages": messages}


def anthropic_conversation(turns: Turns) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for calls in turns:
        uses = [{"type": "tool_use", "id": i, "name": t, "input": {}} for i, t in calls]
        results = [
            {"type": "tool_result", "tool_use_id": i, "content": f"real {i}"} for i, _ in calls
        ]
        messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    return {"model": "m", "max_tokens": 64, "messages": messages}


def responses_conversation(turns: Turns) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for calls in turns:
        items += [
            {"type": "function_call", "call_id": i, "name": t, "arguments": "{}"} for i, t in calls
        ]
        items += [
            {"type": "function_call_output", "call_id": i, "output": f"real {i}"} for i, _ in calls
        ]
    return {"model": "m", "input": items}


DIALECTS = pytest.mark.parametrize(
    ("dialect", "conversation"),
    [
        (CHAT, chat_conversation),
        (MESSAGES, anthropic_conversation),
        (RESPONSES, responses_conversation),
    ],
    ids=["openai_chat", "anthropic_messages", "openai_responses"],
)
Build = Callable[[Turns], dict[str, Any]]

# search and book asked for together, then search again.
TWO_TURNS: Turns = [[("c0", "search"), ("c1", "book")], [("c2", "search")]]


def outline(events: list[ToolEvent]) -> list[str]:
    """The exchange as short words. A model turn with no result since the previous one is the
    same answer (Responses starts a turn at every function_call item of one answer)."""
    words: list[str] = []
    answered = True
    for event in events:
        if isinstance(event, ModelTurn):
            if answered:
                words.append("turn")
            answered = False
        elif isinstance(event, CallMade):
            words.append(f"call {event.call_id} {event.tool}")
        else:
            words.append(f"result {event.call_id}: {event.text}")
            answered = True
    return words


def result_texts(dialect: Dialect, request: Any) -> list[str]:
    return [e.text for e in dialect.tool_exchange(request) if isinstance(e, ResultSlot)]


@DIALECTS
def test_the_exchange_is_in_conversation_order(dialect: Dialect, conversation: Build) -> None:
    assert outline(list(dialect.tool_exchange(conversation(TWO_TURNS)))) == [
        "turn",
        "call c0 search",
        "call c1 book",
        "result c0: real c0",
        "result c1: real c1",
        "turn",
        "call c2 search",
        "result c2: real c2",
    ]


@DIALECTS
def test_the_kth_call_of_a_tool_gets_the_kth_result(dialect: Dialect, conversation: Build) -> None:
    mocks = {"search": ToolMock(("first", {"hits": 2}), repeat=False)}
    out = dialect.substitute_tool_results(conversation(TWO_TURNS), mocks)
    assert result_texts(dialect, out) == ["first", "real c1", '{"hits": 2}']


@DIALECTS
def test_substitution_writes_a_copy(dialect: Dialect, conversation: Build) -> None:
    request = conversation(TWO_TURNS)
    dialect.substitute_tool_results(request, {"search": ToolMock(("x",), repeat=True)})
    assert request == conversation(TWO_TURNS)


@DIALECTS
def test_no_mocks_leave_the_request_as_it_is(dialect: Dialect, conversation: Build) -> None:
    request = conversation(TWO_TURNS)
    assert dialect.substitute_tool_results(request, {}) is request


@DIALECTS
def test_a_call_past_the_end_of_results_raises(dialect: Dialect, conversation: Build) -> None:
    with pytest.raises(ToolResultsExhausted) as caught:
        dialect.substitute_tool_results(
            conversation(TWO_TURNS), {"search": ToolMock(("only",), repeat=False)}
        )
    assert str(caught.value) == (
        "tool search was called 2 times, but its results: list has only 1 entry"
    )


@DIALECTS
def test_latest_results_are_those_after_the_last_model_turn(
    dialect: Dialect, conversation: Build
) -> None:
    assert dialect.latest_tool_results(conversation(TWO_TURNS)) == [("search", "real c2")]
    assert dialect.latest_tool_results(conversation(TWO_TURNS[:1])) == [
        ("search", "real c0"),
        ("book", "real c1"),
    ]
    assert dialect.latest_tool_results(conversation([])) == []


@DIALECTS
def test_latest_results_are_read_after_substitution(dialect: Dialect, conversation: Build) -> None:
    mocks = {"search": ToolMock(("mocked",), repeat=True)}
    out = dialect.substitute_tool_results(conversation(TWO_TURNS), mocks)
    assert dialect.latest_tool_results(out) == [("search", "mocked")]


def test_a_result_without_its_call_is_named_by_the_call_id() -> None:
    orphan = {"role": "tool", "tool_call_id": "call_gone", "content": "x"}
    request = {"messages": [{"role": "user", "content": "go"}, orphan]}
    assert CHAT.latest_tool_results(request) == [("call_gone", "x")]
    block = {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "x"}
    assert MESSAGES.latest_tool_results({"messages": [{"role": "user", "content": [block]}]}) == [
        ("toolu_gone", "x")
    ]
    item = {"type": "function_call_output", "call_id": "fc_gone", "output": "x"}
    assert RESPONSES.latest_tool_results({"input": [item]}) == [("fc_gone", "x")]


def test_chat_tool_content_parts_are_joined_whatever_their_type() -> None:
    request = chat_conversation([[("c0", "search")]])
    parts = [{"type": "text", "text": "a"}, {"type": "refusal", "text": "b"}, "stray"]
    request["messages"][-1]["content"] = parts
    assert CHAT.latest_tool_results(request) == [("search", "ab")]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("plain", "plain"),
        (
            [
                {"type": "text", "text": "a"},
                {"type": "image", "source": {}},
                {"type": "text", "text": "b"},
            ],
            "ab",
        ),
        (None, ""),
    ],
    ids=["string", "blocks", "none"],
)
def test_anthropic_tool_result_content_is_a_string_or_text_blocks(content: Any, text: str) -> None:
    request = anthropic_conversation([[("c0", "search")]])
    request["messages"][-1]["content"][0]["content"] = content
    assert MESSAGES.latest_tool_results(request) == [("search", text)]


def test_anthropic_a_typed_user_message_does_not_start_a_model_turn() -> None:
    request = anthropic_conversation([[("c0", "search")]])
    request["messages"].append({"role": "user", "content": "and hurry"})
    assert MESSAGES.latest_tool_results(request) == [("search", "real c0")]


def test_anthropic_only_user_messages_hold_results() -> None:
    request = anthropic_conversation([[("c0", "search")]])
    request["messages"][-1]["role"] = "assistant"
    events = list(MESSAGES.tool_exchange(request))
    assert not any(isinstance(event, ResultSlot) for event in events)


def test_responses_output_is_a_string_or_input_text_parts() -> None:
    request = responses_conversation([[("c0", "search")]])
    request["input"][-1]["output"] = [
        {"type": "input_text", "text": "a"},
        {"type": "input_image", "image_url": "x", "text": "not text"},
        {"type": "input_text", "text": "b"},
    ]
    assert RESPONSES.latest_tool_results(request) == [("search", "ab")]


@pytest.mark.parametrize(
    ("item", "latest"),
    [
        ({"type": "message", "role": "assistant", "content": "thinking aloud"}, []),
        ({"type": "function_call", "call_id": "c9", "name": "book", "arguments": "{}"}, []),
        ({"type": "reasoning", "id": "rs_1", "summary": []}, [("search", "real c0")]),
        ({"role": "user", "content": "and hurry"}, [("search", "real c0")]),
    ],
    ids=["assistant message", "function call", "reasoning", "user message"],
)
def test_responses_a_model_turn_begins_at_a_call_or_an_assistant_item(
    item: dict[str, Any], latest: list[tuple[str, str]]
) -> None:
    request = responses_conversation([[("c0", "search")]])
    request["input"].append(item)
    assert RESPONSES.latest_tool_results(request) == latest


def test_a_slot_names_where_the_content_lives() -> None:
    request = responses_conversation([[("c0", "search")]])
    slot = next(e for e in RESPONSES.tool_exchange(request) if isinstance(e, ResultSlot))
    assert slot == ResultSlot("c0", request["input"][-1], "output", ("input_text",))
    assert slot.holder is request["input"][-1]


def test_bodies_that_are_not_conversations_have_no_exchange() -> None:
    for dialect in (CHAT, MESSAGES, RESPONSES):
        for body in ("text", None, {"messages": "x", "input": 3}, {}):
            assert list(dialect.tool_exchange(body)) == []
            assert dialect.substitute_tool_results(body, {"t": ToolMock(("x",), True)}) == body


@pytest.mark.parametrize(
    ("content", "part_types", "text"),
    [
        ("as is", ("text",), "as is"),
        ([{"type": "text", "text": "a"}, {"type": "thinking", "text": "b"}], ("text",), "a"),
        ([{"type": "text", "text": "a"}, {"type": "thinking", "text": "b"}], None, "ab"),
        ([{"type": "text"}, {"type": "text", "text": 7}], None, "7"),
        ([{"type": "output_text", "text": "x"}], ("input_text", "output_text"), "x"),
        (None, None, ""),
        ({"text": "a dict is not a content list"}, None, ""),
    ],
)
def test_join_text(content: Any, part_types: tuple[str, ...] | None, text: str) -> None:
    assert join_text(content, part_types) == text

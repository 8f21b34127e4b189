"""Anthropic Messages: routing, facts, tool-result substitution, auth and SSE synthesis."""

from __future__ import annotations

import json

import pytest

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import ToolMock
from flowproof.dialects import dialect_for_path, dialect_named
from flowproof.dialects.anthropic import AnthropicMessages, canonical_input
from flowproof.dialects.base import Envelope
from flowproof.matching.divergence import explain

MESSAGES = dialect_named("anthropic_messages")


def tool_use(call_id: str, name: str, arguments: dict | None = None) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments or {}}


def tool_result(call_id: str, content: object) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def conversation(*tool_names: str) -> dict:
    """One assistant tool_use turn and one user tool_result turn per tool name."""
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for number, name in enumerate(tool_names):
        call_id = f"toolu_{number}"
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Let me look."}, tool_use(call_id, name)],
            }
        )
        messages.append({"role": "user", "content": [tool_result(call_id, f"real {number}")]})
    return {"model": "claude-x", "max_tokens": 64, "system": "sys", "messages": messages}


def results_of(request: dict) -> list:
    return [
        block["content"]
        for message in request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


# -- routing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/messages", "/messages", "/v1/v1/messages"])
def test_routes_every_base_url_convention_here(path: str) -> None:
    """anthropic-python with no /v1 in the base, the AI SDK with it, anthropic-python with it."""
    assert dialect_for_path(path) is MESSAGES


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v1/chat/completions", "openai_chat"),
        ("/chat/completions", "openai_chat"),
        ("/v1//chat/completions", "openai_chat"),
        ("/v1/responses", "openai_responses"),
    ],
)
def test_the_other_apis_are_not_captured_by_the_messages_marker(path: str, name: str) -> None:
    assert dialect_for_path(path) is dialect_named(name)


@pytest.mark.parametrize(
    "path",
    ["/v1/messages/count_tokens", "/v1/messages/batches", "/v1/chat/completions/c1/messages"],
)
def test_sub_resources_that_contain_the_marker_are_not_routed_here(path: str) -> None:
    assert dialect_for_path(path) is None


def test_wiring_for_record() -> None:
    assert isinstance(MESSAGES, AnthropicMessages)
    assert (MESSAGES.upstream_variable, MESSAGES.upstream_variable_adds_v1) == (
        "ANTHROPIC_BASE_URL",
        True,
    )
    assert MESSAGES.default_upstream + MESSAGES.upstream_path == (
        "https://api.anthropic.com/v1/messages"
    )
    assert MESSAGES.passthrough_headers == ("anthropic-version", "anthropic-beta")


# -- auth ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["sk-ant-1", "Bearer sk-ant-1", "bearer sk-ant-1"])
def test_the_key_goes_in_x_api_key_bare(key: str) -> None:
    assert MESSAGES.auth_headers(key) == {"x-api-key": "sk-ant-1"}


# -- facts --------------------------------------------------------------------------------------

TOOL_TURN = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [
        {"type": "text", "text": "Let me check."},
        tool_use("toolu_1", "search_flights", {"destination": "Nairobi", "date": "2026-12-01"}),
        tool_use("toolu_2", "check_visa", {"country": "Kenya — KE", "for": ["me"]}),
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}
TEXT_TURN = {
    **TOOL_TURN,
    "content": [{"type": "text", "text": "Booked "}, {"type": "text", "text": "B-1042."}],
    "stop_reason": "end_turn",
}


def test_tool_calls_serialise_input_canonically_in_block_order() -> None:
    assert MESSAGES.tool_calls(TOOL_TURN) == [
        ("search_flights", '{"destination": "Nairobi", "date": "2026-12-01"}'),
        ("check_visa", '{"country": "Kenya — KE", "for": ["me"]}'),
    ]
    assert MESSAGES.tool_calls(TEXT_TURN) == []


def test_canonical_input_is_json_dumps_with_default_separators_and_no_ascii_escapes() -> None:
    value = {"b": 1, "a": {"name": "Zoë"}}
    assert canonical_input(value) == '{"b": 1, "a": {"name": "Zoë"}}'
    assert json.loads(canonical_input(value)) == value


def test_reply_is_the_joined_text_only_when_no_tool_is_asked_for() -> None:
    assert MESSAGES.reply_text(TOOL_TURN) is None
    assert MESSAGES.reply_text(TEXT_TURN) == "Booked B-1042."


@pytest.mark.parametrize(
    "system",
    [
        "You are a travel assistant.",
        [
            {"type": "text", "text": "You are a travel "},
            {"type": "text", "text": "assistant.", "cache_control": {"type": "ephemeral"}},
        ],
    ],
)
def test_system_prompt_is_the_top_level_system_string_or_blocks(system: object) -> None:
    request = {"system": system, "messages": [{"role": "user", "content": "hi"}]}
    assert MESSAGES.system_prompt(request) == "You are a travel assistant."
    assert MESSAGES.system_prompt({"messages": []}) == ""


def test_latest_tool_results_are_those_after_the_last_assistant_turn() -> None:
    request = conversation("search", "book")
    request["messages"][-1]["content"].append(
        tool_result("toolu_x", [{"type": "text", "text": "a "}, {"type": "text", "text": "b"}])
    )
    assert MESSAGES.latest_tool_results(request) == [("book", "real 1"), ("toolu_x", "a b")]
    assert MESSAGES.latest_tool_results({"messages": [{"role": "user", "content": "hi"}]}) == []


def test_envelope_names_the_block_types_of_tool_turns() -> None:
    request = {
        **conversation("search_flights"),
        "tools": [{"name": "search_flights"}, {"type": "web_search_20250305", "name": "web"}],
    }
    request["messages"].append({"role": "user", "content": [{"type": "text", "text": "thanks"}]})
    assert MESSAGES.envelope(request) == Envelope(
        model="claude-x",
        tools=("search_flights", "web"),
        roles=("user", "assistant(text+tool_use)", "user(tool_result)", "user"),
    )


def test_a_divergence_names_the_turn_that_stopped_being_a_tool_result() -> None:
    recorded = conversation("search")
    replayed = conversation("search")
    replayed["messages"][-1] = {"role": "user", "content": "never mind"}
    found = explain(3, 2, "anthropic_messages", recorded, MESSAGES, replayed)
    assert found.render() == (
        "request 3 matches no recorded turn (compared with recorded turn 3)\n"
        "messages: recorded 3 (user assistant(text+tool_use) user(tool_result)), "
        "replayed 3 (user assistant(text+tool_use) user)\n"
        'messages[2].content: recorded [{"type": "tool_result", "tool_use_id": "toolu_0", '
        '"content": "real 0"}], replayed "never mind"'
    )


# -- substitution -------------------------------------------------------------------------------


def test_result_replaces_every_call_of_the_tool() -> None:
    mocks = {"search": ToolMock(({"hits": 1},), repeat=True)}
    out = MESSAGES.substitute_tool_results(conversation("search", "book", "search"), mocks)
    assert results_of(out) == ['{"hits": 1}', "real 1", '{"hits": 1}']


def test_results_are_served_in_call_order() -> None:
    mocks = {"search": ToolMock(("first", "second"), repeat=False)}
    out = MESSAGES.substitute_tool_results(conversation("search", "book", "search"), mocks)
    assert results_of(out) == ["first", "real 1", "second"]


def test_two_calls_in_one_turn_count_as_two_occurrences() -> None:
    request = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [tool_use("toolu_a", "search"), tool_use("toolu_b", "search")],
            },
            {
                "role": "user",
                "content": [tool_result("toolu_b", [{"type": "text", "text": "raw b"}])]
                + [tool_result("toolu_a", "raw a")],
            },
        ]
    }
    out = MESSAGES.substitute_tool_results(request, {"search": ToolMock(("1st", "2nd"), False)})
    # matched by tool_use_id, not by position, and a block-list content becomes the string
    assert results_of(out) == ["2nd", "1st"]


def test_a_call_past_the_end_of_results_is_named() -> None:
    mocks = {"search": ToolMock(("only",), repeat=False)}
    with pytest.raises(ToolResultsExhausted) as caught:
        MESSAGES.substitute_tool_results(conversation("search", "search"), mocks)
    assert (
        str(caught.value)
        == "tool search was called 2 times, but its results: list has only 1 entry"
    )


def test_substitution_does_not_touch_the_original() -> None:
    request = conversation("search")
    before = json.dumps(request)
    out = MESSAGES.substitute_tool_results(request, {"search": ToolMock(("x",), repeat=True)})
    assert json.dumps(request) == before and results_of(out) == ["x"]


def test_nothing_to_substitute_returns_the_request_as_is() -> None:
    request = conversation("book")
    assert MESSAGES.substitute_tool_results(request, {}) is request
    assert MESSAGES.substitute_tool_results(request, {"search": ToolMock(("x",), True)}) == request


# -- streaming ----------------------------------------------------------------------------------


def parse_stream(chunks: list[bytes]) -> list[tuple[str | None, dict]]:
    """(event, data) per frame, the way an SSE client splits the concatenated chunks."""
    events = []
    for frame in b"".join(chunks).decode().split("\n\n"):
        if not frame:
            continue
        fields = dict(line.split(": ", 1) for line in frame.split("\n"))
        events.append((fields.get("event"), json.loads(fields["data"])))
    return events


def test_stream_is_the_documented_event_sequence_each_with_an_event_line() -> None:
    events = parse_stream(list(MESSAGES.render_stream({"stream": True}, TOOL_TURN)))
    assert all(event == data["type"] for event, data in events)
    assert [event for event, _ in events] == [
        "message_start",
        *["content_block_start", "content_block_delta", "content_block_stop"] * 3,
        "message_delta",
        "message_stop",
    ]
    assert events[0][1]["message"] == {
        **TOOL_TURN,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }
    assert [data["index"] for _, data in events[1:-2]] == [0] * 3 + [1] * 3 + [2] * 3
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "Let me check."}
    assert events[4][1]["content_block"] == {**TOOL_TURN["content"][1], "input": {}}
    assert events[5][1]["delta"] == {
        "type": "input_json_delta",
        "partial_json": '{"destination": "Nairobi", "date": "2026-12-01"}',
    }
    assert events[-2][1] == {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    assert events[-1][1] == {"type": "message_stop"}


def assemble(events: list[tuple[str | None, dict]]) -> dict:
    """Rebuild the message the way the SDK's accumulator does."""
    message: dict = {}
    pieces: dict[int, str] = {}
    for _, data in events:
        if data["type"] == "message_start":
            message = json.loads(json.dumps(data["message"]))
        elif data["type"] == "content_block_start":
            message["content"].append(dict(data["content_block"]))
        elif data["type"] == "content_block_delta":
            block, delta = message["content"][data["index"]], data["delta"]
            if delta["type"] == "input_json_delta":
                pieces[data["index"]] = pieces.get(data["index"], "") + delta["partial_json"]
                block["input"] = json.loads(pieces[data["index"]])
            else:
                field = delta["type"].removesuffix("_delta")
                block[field] += delta[field]
        elif data["type"] == "message_delta":
            message.update(data["delta"])
            message["usage"]["output_tokens"] = data["usage"]["output_tokens"]
    return message


@pytest.mark.parametrize(
    "response",
    [
        TOOL_TURN,
        TEXT_TURN,
        {
            **TEXT_TURN,
            "content": [
                {"type": "thinking", "thinking": "Hmm.", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Done."},
            ],
            "stop_details": None,
        },
    ],
    ids=["tool_use", "text", "thinking"],
)
def test_an_assembled_stream_is_the_recorded_message(response: dict) -> None:
    events = parse_stream(list(MESSAGES.render_stream({"stream": True}, response)))
    assert assemble(events) == response


def test_error_body_has_the_anthropic_shape() -> None:
    assert MESSAGES.error_body("no match", "flowproof_replay_divergence") == {
        "type": "error",
        "error": {"type": "flowproof_replay_divergence", "message": "no match"},
    }

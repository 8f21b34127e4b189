"""Responses facts, tool-result substitution and SSE synthesis."""

from __future__ import annotations

import json

import pytest

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import ToolMock
from flowproof.dialects import dialect_for_path, dialect_named
from flowproof.dialects.base import Envelope

RESPONSES = dialect_named("openai_responses")
TOOLS = [
    {"type": "function", "name": "search", "parameters": {}, "strict": True},
    {"type": "function", "name": "book", "parameters": {}, "strict": True},
    {"type": "web_search"},
]


def make_request(*tool_names: str) -> dict:
    """An openai-agents style request: the history as input items, each call echoed back."""
    items: list[dict] = [{"content": "go", "role": "user"}]
    for number, name in enumerate(tool_names):
        call_id = f"call_{number}"
        items.append(
            {
                "arguments": "{}",
                "call_id": call_id,
                "name": name,
                "type": "function_call",
                "id": f"fc_{number}",
                "status": "completed",
            }
        )
        items.append(
            {"call_id": call_id, "output": f"real {number}", "type": "function_call_output"}
        )
    return {"model": "m", "input": items, "instructions": "Be brief.", "tools": TOOLS}


def function_call(name: str, arguments: str, call_id: str = "call_1") -> dict:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def message(*texts: str, item_id: str = "msg_1") -> dict:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": t, "annotations": []} for t in texts],
    }


def make_response(*output: dict) -> dict:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
    }


# -- routing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/responses", "/responses", "/v1/v1/responses"])
def test_routes_on_a_substring_of_the_path(path: str) -> None:
    assert dialect_for_path(path) is RESPONSES


def test_chat_completions_does_not_route_here() -> None:
    assert dialect_for_path("/v1/chat/completions") is dialect_named("openai_chat")


# -- facts ------------------------------------------------------------------------------------


def test_tool_calls_are_the_function_call_items() -> None:
    response = make_response(
        {"type": "reasoning", "id": "rs_1", "summary": []},
        function_call("search", '{"q": "x"}'),
        function_call("book", '{"id": 1}', "call_2"),
    )
    assert RESPONSES.tool_calls(response) == [("search", '{"q": "x"}'), ("book", '{"id": 1}')]
    assert RESPONSES.reply_text(response) is None


def test_reply_is_the_output_text_of_the_message_items() -> None:
    response = make_response(
        {"type": "reasoning", "id": "rs_1", "summary": []}, message("Booked ", "KQ311.")
    )
    assert RESPONSES.reply_text(response) == "Booked KQ311."
    assert RESPONSES.tool_calls(response) == []


def test_system_prompt_is_the_instructions() -> None:
    assert RESPONSES.system_prompt(make_request()) == "Be brief."


@pytest.mark.parametrize(
    "content", ["Be terse.", [{"type": "input_text", "text": "Be terse."}]], ids=["str", "parts"]
)
def test_system_prompt_falls_back_to_a_system_or_developer_item(content: object) -> None:
    for role in ("system", "developer"):
        request = {"input": [{"role": role, "content": content}, {"role": "user", "content": "hi"}]}
        assert RESPONSES.system_prompt(request) == "Be terse."
    assert RESPONSES.system_prompt({"input": "hi"}) == ""


def test_envelope_names_flat_tools_and_item_roles() -> None:
    assert RESPONSES.envelope(make_request("search")) == Envelope(
        model="m",
        tools=("search", "book", "web_search"),
        roles=("user", "function_call", "function_call_output"),
    )


def test_envelope_of_a_plain_string_input_is_one_user_message() -> None:
    assert RESPONSES.envelope({"model": "m", "input": "hi"}) == Envelope("m", (), ("user",))


# -- substitution -----------------------------------------------------------------------------


def outputs(request: dict) -> list:
    return [i["output"] for i in request["input"] if i.get("type") == "function_call_output"]


def test_result_replaces_every_call_of_the_tool() -> None:
    mocks = {"search": ToolMock(({"hits": 1},), repeat=True)}
    out = RESPONSES.substitute_tool_results(make_request("search", "book", "search"), mocks)
    assert outputs(out) == ['{"hits": 1}', "real 1", '{"hits": 1}']


def test_results_are_served_in_call_order() -> None:
    mocks = {"search": ToolMock(("first", "second"), repeat=False)}
    out = RESPONSES.substitute_tool_results(make_request("search", "book", "search"), mocks)
    assert outputs(out) == ["first", "real 1", "second"]


def test_a_call_past_the_end_of_results_is_named() -> None:
    mocks = {"search": ToolMock(("only",), repeat=False)}
    with pytest.raises(ToolResultsExhausted) as caught:
        RESPONSES.substitute_tool_results(make_request("search", "search"), mocks)
    assert (
        str(caught.value)
        == "tool search was called 2 times, but its results: list has only 1 entry"
    )


def test_substitution_does_not_touch_the_original() -> None:
    request = make_request("search")
    out = RESPONSES.substitute_tool_results(request, {"search": ToolMock(("x",), repeat=True)})
    assert outputs(request) == ["real 0"] and outputs(out) == ["x"]


def test_string_input_is_left_alone() -> None:
    request = {"model": "m", "input": "hi"}
    assert RESPONSES.substitute_tool_results(request, {"search": ToolMock(("x",), True)}) == request


# -- streaming --------------------------------------------------------------------------------


def parse_stream(frames: list[bytes]) -> list[tuple[str, dict]]:
    """(event line, data) per frame, checking each frame is exactly `event:` then `data:`."""
    parsed = []
    for frame in frames:
        text = frame.decode()
        assert text.endswith("\n\n")
        event_line, data_line = text[:-2].split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        parsed.append((event_line[len("event: ") :], json.loads(data_line[len("data: ") :])))
    return parsed


def test_stream_of_a_tool_call() -> None:
    call = function_call("search", '{"q": "x"}')
    response = make_response(call)
    events = parse_stream(list(RESPONSES.render_stream({"stream": True}, response)))
    assert [name for name, _ in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert all(data["type"] == name for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(7))
    created = events[0][1]["response"]
    assert created["id"] == "resp_1" and created["status"] == "in_progress"
    assert created["output"] == [] and created["usage"] is None
    assert events[2][1]["item"] == {**call, "arguments": "", "status": "in_progress"}
    assert events[3][1] == {
        "type": "response.function_call_arguments.delta",
        "sequence_number": 3,
        "item_id": "fc_call_1",
        "output_index": 0,
        "delta": '{"q": "x"}',
    }
    assert events[4][1]["arguments"] == '{"q": "x"}'
    assert events[5][1]["item"] == call
    assert events[-1][1]["response"] == response


def test_stream_of_a_text_answer() -> None:
    reply = message("Booked.")
    response = make_response(reply)
    events = parse_stream(list(RESPONSES.render_stream({"stream": True}, response)))
    assert [name for name, _ in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in events] == list(range(9))
    assert events[2][1]["item"] == {**reply, "status": "in_progress", "content": []}
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    assert events[3][1] == {
        "type": "response.content_part.added",
        "sequence_number": 3,
        **where,
        "part": {"type": "output_text", "text": "", "annotations": []},
    }
    assert events[4][1]["delta"] == "Booked." and events[5][1]["text"] == "Booked."
    assert events[6][1]["part"] == reply["content"][0]
    assert events[7][1]["item"] == reply
    assert events[-1][1]["response"] == response


def test_stream_indexes_several_items_and_keeps_other_items_whole() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    response = make_response(
        reasoning, function_call("a", "{}", "c1"), function_call("b", "{}", "c2")
    )
    events = parse_stream(list(RESPONSES.render_stream({"stream": True}, response)))
    added = [data for name, data in events if name == "response.output_item.added"]
    assert [(d["output_index"], d["item"]["id"]) for d in added] == [
        (0, "rs_1"),
        (1, "fc_c1"),
        (2, "fc_c2"),
    ]
    assert added[0]["item"] == reasoning
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))


def test_stream_ends_with_the_terminal_event_for_the_recorded_status() -> None:
    response = {**make_response(message("cut")), "status": "incomplete"}
    events = parse_stream(list(RESPONSES.render_stream({"stream": True}, response)))
    assert events[-1][0] == "response.incomplete" and events[-1][1]["response"] == response
    assert not any(name == "response.completed" for name, _ in events)


def test_stream_has_no_done_marker() -> None:
    raw = b"".join(RESPONSES.render_stream({"stream": True}, make_response(message("x"))))
    assert b"[DONE]" not in raw


def test_error_body_has_the_openai_shape() -> None:
    assert RESPONSES.error_body("no match", "flowproof_replay_divergence") == {
        "error": {
            "message": "no match",
            "type": "flowproof_replay_divergence",
            "param": None,
            "code": "flowproof_replay_divergence",
        }
    }


def test_latest_tool_results_are_those_after_the_last_model_turn() -> None:
    request = {
        "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "a", "name": "search", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "first"},
            {"type": "function_call", "call_id": "b", "name": "book", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "b", "output": "booked"},
        ]
    }
    assert RESPONSES.latest_tool_results(request) == [("book", "booked")]


def test_text_response_is_a_complete_reply() -> None:
    answer = RESPONSES.text_response({"model": "m"}, "hello")
    assert RESPONSES.reply_text(answer) == "hello" and RESPONSES.tool_calls(answer) == []

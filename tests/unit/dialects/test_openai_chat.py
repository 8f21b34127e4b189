"""Chat-completions facts, tool-result substitution and SSE synthesis."""

from __future__ import annotations

import json

import pytest

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import ToolMock
from flowproof.dialects import dialect_for_path, dialect_named

CHAT = dialect_named("openai_chat")


def conversation(*tool_names: str) -> dict:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]
    for number, name in enumerate(tool_names):
        call_id = f"call_{number}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"real {number}"})
    return {"model": "m", "messages": messages}


@pytest.mark.parametrize(
    "path",
    [
        "/v1/chat/completions",
        "/chat/completions",
        "/v1/v1/chat/completions",
        "/v1//chat/completions",
    ],
)
def test_routes_on_a_substring_of_the_path(path: str) -> None:
    assert dialect_for_path(path) is CHAT


def test_unknown_path_has_no_dialect() -> None:
    assert dialect_for_path("/v1/embeddings") is None


def test_result_replaces_every_call_of_the_tool() -> None:
    mocks = {"search": ToolMock(({"hits": 1},), repeat=True)}
    out = CHAT.substitute_tool_results(conversation("search", "book", "search"), mocks)
    tool_contents = [m["content"] for m in out["messages"] if m["role"] == "tool"]
    assert tool_contents == ['{"hits": 1}', "real 1", '{"hits": 1}']


def test_results_are_served_in_call_order() -> None:
    mocks = {"search": ToolMock(("first", "second"), repeat=False)}
    out = CHAT.substitute_tool_results(conversation("search", "search"), mocks)
    assert [m["content"] for m in out["messages"] if m["role"] == "tool"] == ["first", "second"]


def test_a_call_past_the_end_of_results_is_named() -> None:
    mocks = {"search": ToolMock(("only",), repeat=False)}
    with pytest.raises(ToolResultsExhausted) as caught:
        CHAT.substitute_tool_results(conversation("search", "search"), mocks)
    assert (
        str(caught.value)
        == "tool search was called 2 times, but its results: list has only 1 entry"
    )


def test_substitution_does_not_touch_the_original() -> None:
    request = conversation("search")
    CHAT.substitute_tool_results(request, {"search": ToolMock(("x",), repeat=True)})
    assert request["messages"][-1]["content"] == "real 0"


RESPONSE = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "x"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def frames(request: dict) -> list:
    raw = b"".join(CHAT.render_stream(request, RESPONSE)).decode()
    return [line[len("data: ") :] for line in raw.split("\n\n") if line]


def test_stream_carries_tool_call_deltas_and_done() -> None:
    data = frames({"stream": True})
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[1]["tool_calls"][0]["function"] == {"name": "search", "arguments": ""}
    assert deltas[2]["tool_calls"][0]["function"] == {"arguments": '{"q": "x"}'}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert all("usage" not in c for c in chunks)


def test_stream_honours_include_usage() -> None:
    chunks = [
        json.loads(d)
        for d in frames({"stream": True, "stream_options": {"include_usage": True}})[:-1]
    ]
    assert chunks[-1] == {
        "id": "chatcmpl-1",
        "created": 1,
        "model": "m",
        "object": "chat.completion.chunk",
        "system_fingerprint": None,
        "choices": [],
        "usage": RESPONSE["usage"],
    }
    assert all(c["usage"] is None for c in chunks[:-1])


def test_reply_and_tool_calls() -> None:
    assert CHAT.tool_calls(RESPONSE) == [("search", '{"q": "x"}')]
    assert CHAT.reply_text(RESPONSE) is None
    text = {"choices": [{"message": {"role": "assistant", "content": "done"}}]}
    assert CHAT.reply_text(text) == "done"

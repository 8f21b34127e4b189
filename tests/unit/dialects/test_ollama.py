"""Ollama's native /api/chat: streams by default, NDJSON, name-and-order tool results."""

from __future__ import annotations

import json

from flowproof.core.mocks import ToolMock
from flowproof.dialects import dialect_for_path, dialect_named
from flowproof.proxy.forward import Upstream

OLLAMA = dialect_named("ollama_chat")
assert OLLAMA is not None


def called(*names: str) -> dict:
    calls = [{"function": {"name": n, "arguments": {"q": i}}} for i, n in enumerate(names)]
    return {"role": "assistant", "content": "", "tool_calls": calls}


def conversation() -> dict:
    return {
        "model": "llama3.2",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "go"},
            called("search", "book"),
            {"role": "tool", "content": "real book", "tool_name": "book"},
            {"role": "tool", "content": "real search 0", "tool_name": "search"},
            called("search"),
            {"role": "tool", "content": "real search 1"},  # no tool_name: the open call's
        ],
        "tools": [{"type": "function", "function": {"name": "search"}}],
        "stream": False,
    }


def test_api_chat_is_ollama_and_streams_unless_told_not_to() -> None:
    assert dialect_for_path("/api/chat") is OLLAMA
    assert dialect_for_path("/api/chat/") is OLLAMA
    assert dialect_for_path("/api/generate") is None
    assert OLLAMA.wants_stream({}) and OLLAMA.wants_stream({"stream": True})
    assert OLLAMA.wants_stream({"stream": None})
    assert not OLLAMA.wants_stream({"stream": False})


def test_record_always_asks_for_one_whole_answer() -> None:
    assert OLLAMA.upstream_body({"model": "m", "stream": True}) == {"model": "m", "stream": False}
    assert OLLAMA.upstream_body({"model": "m"}) == {"model": "m", "stream": False}


def test_facts_of_a_response() -> None:
    call = {"function": {"name": "search", "arguments": {"q": "NBO"}}}
    asked = {"message": {"role": "assistant", "content": "", "tool_calls": [call]}}
    assert OLLAMA.tool_calls(asked) == [("search", '{"q": "NBO"}')]
    assert OLLAMA.reply_text(asked) is None
    answered = {"message": {"role": "assistant", "content": "Booked.", "thinking": "hm"}}
    assert OLLAMA.reply_text(answered) == "Booked."
    assert OLLAMA.system_prompt(conversation()) == "sys"
    assert OLLAMA.envelope(conversation()).tools == ("search",)


def test_results_answer_calls_by_name_and_order() -> None:
    mocks = {"search": ToolMock(("first", "second"), repeat=False)}
    out = OLLAMA.substitute_tool_results(conversation(), mocks)
    assert [m["content"] for m in out["messages"] if m["role"] == "tool"] == [
        "real book",
        "first",
        "second",
    ]
    assert OLLAMA.latest_tool_results(out) == [("search", "second")]


def test_the_stream_is_ndjson_ending_in_a_done_line_with_the_stats() -> None:
    response = {
        "model": "llama3.2",
        "created_at": "t",
        "message": {"role": "assistant", "content": "Hi"},
        "done": True,
        "done_reason": "stop",
        "eval_count": 5,
    }
    lines = OLLAMA.render_stream({}, response)
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)
    first, last = (json.loads(line) for line in lines)
    assert first == {
        "model": "llama3.2",
        "created_at": "t",
        "message": response["message"],
        "done": False,
    }
    assert last == {**response, "message": {"role": "assistant", "content": ""}}
    assert OLLAMA.stream_content_type == "application/x-ndjson"


def test_ollama_host_may_come_without_a_scheme() -> None:
    route = OLLAMA.route("/api/chat", "")
    assert Upstream.from_environ({"OLLAMA_HOST": "127.0.0.1:11500"}).url_for(OLLAMA, route) == (
        "http://127.0.0.1:11500/api/chat"
    )
    assert Upstream.from_environ({}).url_for(OLLAMA, route) == "http://127.0.0.1:11434/api/chat"
    assert Upstream.from_environ({}).headers_for(OLLAMA, {}).get("Authorization") is None

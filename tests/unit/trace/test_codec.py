"""The trace file: readable, exact, versioned, written atomically, never holding a secret."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowproof.core.errors import TraceError
from flowproof.trace import codec
from flowproof.trace.model import Lane, Trace, Turn
from flowproof.trace.store import load_trace, trace_path_for, write_trace

REQUEST = {
    "model": "m",
    "messages": [{"role": "user", "content": "Nairobi — tomorrow"}],
    "temperature": 0,
}
RESPONSE = {
    "choices": [{"message": {"tool_calls": [{"function": {"arguments": '{"b":1, "a":2}'}}]}}]
}


def test_round_trip_keeps_every_value_and_key_order(tmp_path: Path) -> None:
    trace = Trace.from_turns((Turn("openai_chat", REQUEST, RESPONSE),), "0.1.0")
    path = tmp_path / "t.trace.json"
    write_trace(path, trace)
    loaded = load_trace(path)
    assert loaded == trace
    assert list(loaded.turns[0].request) == ["model", "messages", "temperature"]
    assert "Nairobi — tomorrow" in path.read_text()  # readable, not \u-escaped


def test_bodies_are_pretty_printed_for_review() -> None:
    text = codec.encode(Trace.from_turns((Turn("openai_chat", REQUEST, RESPONSE),), "0.1.0"))
    assert re.search(r'\n +"content": "Nairobi — tomorrow"\n', text)


def test_trace_path_sits_beside_the_spec() -> None:
    assert trace_path_for(Path("specs/booking.yaml")) == Path("specs/booking.trace.json")


def test_newer_format_is_refused() -> None:
    with pytest.raises(TraceError, match=r"written by a newer flowproof \(format 99\); upgrade"):
        codec.decode(json.dumps({"format_version": 99, "turns": []}), "x.trace.json")


def test_unreadable_trace_names_the_file() -> None:
    with pytest.raises(TraceError, match="^x.trace.json: not a readable trace"):
        codec.decode("{", "x.trace.json")


def test_a_secret_value_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.json"
    leaky = Trace.from_turns((Turn("openai_chat", {"note": "key is sk-live-123"}, {}),), "0.1.0")
    with pytest.raises(TraceError) as caught:
        write_trace(path, leaky, secrets={"STRIPE_KEY": "sk-live-123"})
    assert str(caught.value) == (
        f"{path}: refusing to write a trace that contains the value of STRIPE_KEY; "
        "the previous trace, if any, is unchanged"
    )
    assert "sk-live-123" not in str(caught.value)
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind either


def test_a_trace_replay_could_not_read_back_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.json"
    unreadable = Trace.from_turns((Turn("openai_chat", {"t": float("nan")}, {}),), "0.1.0")
    with pytest.raises(TraceError) as caught:
        write_trace(path, unreadable)
    assert str(caught.value) == (
        f"{path}: refusing to write a trace flowproof could not read back (lanes.model[0]."
        "request.t: NaN is not a JSON number; write a number or null); the previous trace, if "
        "any, is unchanged"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_trace_holding_a_credential_is_refused_on_load(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.json"
    write_trace(
        path, Trace.from_turns((Turn("openai_chat", {"note": "sk-live-123"}, {}),), "0.1.0")
    )
    assert load_trace(path, credentials={"FLOWPROOF_AGENT_KEY": "sk-other"}).turns
    with pytest.raises(
        TraceError, match="holds the value of FLOWPROOF_AGENT_KEY; delete it and re-record"
    ):
        load_trace(path, credentials={"FLOWPROOF_AGENT_KEY": "sk-live-123"})


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"format_version": "2", "lanes": {}}, 'format_version is "2" (a string), not an integer'),
        ({"format_version": 3.0, "lanes": {}}, "format_version is 3.0 (a number), not an integer"),
        (
            {"format_version": True, "lanes": {}},
            "format_version is true (a boolean), not an integer",
        ),
        (
            {"format_version": 0, "lanes": {}},
            "format_version is 0; trace formats are numbered from 1 to 6",
        ),
        ({"format_version": 2}, "the trace has no 'lanes' field"),
        ({"format_version": 2, "lanes": []}, "lanes is [] (a list), not an object"),
        (
            {"format_version": 2, "lanes": {"model": {}}},
            "lanes.model is {} (an object), not a list",
        ),
        (
            {"format_version": 2, "lanes": {"model": [3]}},
            "lanes.model[0] is 3 (a number), not an object",
        ),
        (
            {"format_version": 2, "lanes": {"model": [{"dialect": "openai_chat", "response": {}}]}},
            "lanes.model[0] has no 'request' field",
        ),
        (
            {"format_version": 2, "flowproof_version": 1, "lanes": {}},
            "flowproof_version is 1 (a number), not a string",
        ),
        ({"format_version": 1, "turns": {}}, "turns is {} (an object), not a list"),
        (
            {"format_version": 1, "turns": [{"dialect": None, "request": {}, "response": {}}]},
            "turns[0].dialect is null (null), not a string",
        ),
    ],
)
def test_a_malformed_trace_names_the_file_and_the_field(document: dict, problem: str) -> None:
    with pytest.raises(TraceError) as caught:
        codec.decode(json.dumps(document), "x.trace.json")
    assert str(caught.value) == (
        f"x.trace.json: malformed trace: {problem}; re-record it with `flowproof record`"
    )


def test_a_trace_nested_too_deeply_is_unreadable_not_a_crash() -> None:
    with pytest.raises(TraceError) as caught:
        codec.decode("[" * 100_000 + "]" * 100_000, "x.trace.json")
    assert str(caught.value) == (
        "x.trace.json: malformed trace: [0][0][0][0][0][0][0][0][0][0][0][0]… (116 levels "
        "more): too deeply nested (more than 128 levels of objects and lists); re-record it "
        "with `flowproof record`"
    )


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"format_version": 1, "flowproof_version": "0.1"}, "the trace has no 'turns' field"),
        ({"format_version": 3, "lanes": {"mcp.files": []}}, "lanes has no 'model' field"),
    ],
    ids=["format-1-without-turns", "without-a-model-lane"],
)
def test_a_trace_missing_its_turns_is_malformed_not_empty(document: dict, problem: str) -> None:
    with pytest.raises(TraceError) as caught:
        codec.decode(json.dumps(document), "x.trace.json")
    assert str(caught.value) == (
        f"x.trace.json: malformed trace: {problem}; re-record it with `flowproof record`"
    )


def test_mcp_lanes_round_trip_with_every_kind_of_entry() -> None:
    from flowproof.mcp.lane import Call, Notice, ServerRequest
    from flowproof.trace.model import Lane

    entries = (
        Call({"method": "initialize", "params": {"protocolVersion": "2025-11-25"}}, {"result": {}}),
        Call({"method": "tools/call", "params": {"name": "rm"}}, {"result": {}}, mocked=True),
        Call({"method": "tools/list"}, {"error": {"code": -32601, "message": "no"}}),
        Notice({"method": "notifications/tools/list_changed"}, after=1),
        ServerRequest({"method": "roots/list"}, {"result": {"roots": []}}, after=2),
    )
    trace = Trace((Lane("model", ()), Lane("mcp.fs", entries)), "0.1.0")
    text = codec.encode(trace)
    assert '"mocked": true' in text and text.count('"mocked"') == 1
    assert codec.decode(text, "t.json") == trace


def test_a_format_2_trace_is_read_as_format_3() -> None:
    document = {"format_version": 2, "flowproof_version": "0.1.0", "lanes": {"model": []}}
    assert codec.decode(json.dumps(document), "t.json").turns == ()


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"call": {"method": "x"}}, "lanes.mcp.fs[0] has no 'answer' field"),
        ({"notification": {"method": "x"}}, "lanes.mcp.fs[0] has no 'after' field"),
        ({"after": 1}, "lanes.mcp.fs[0] is none of call, notification, server_request"),
        ({"call": "x", "answer": {}}, 'lanes.mcp.fs[0].call is "x" (a string), not an object'),
    ],
)
def test_a_malformed_mcp_entry_names_its_place(entry: dict, problem: str) -> None:
    document = {"format_version": 3, "lanes": {"model": [], "mcp.fs": [entry]}}
    with pytest.raises(TraceError) as caught:
        codec.decode(json.dumps(document), "t.json")
    assert problem in str(caught.value)


def test_a_secret_value_json_escaped_inside_a_string_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.json"
    value = 'pa"ss\\wörd'
    result = json.dumps({"password": value}, ensure_ascii=True)
    leaky = Trace.from_turns((Turn("openai_chat", {"tool_result": result}, {}),), "0.1.0")
    with pytest.raises(TraceError, match="contains the value of DB_PASSWORD"):
        write_trace(path, leaky, secrets={"DB_PASSWORD": value})
    assert not path.exists()


def test_a_trace_records_the_facts_normalised_by_default() -> None:
    trace = Trace((Lane("model", ()),), "0.1.0", normalized_by_default=("cwd", "home"))
    text = codec.encode(trace)
    assert '"normalized_by_default": [\n    "cwd",\n    "home"\n  ]' in text
    assert codec.decode(text, "t.json") == trace


def test_a_format_3_trace_lists_no_default_facts() -> None:
    """Recorded before the defaults: replay matches it with its declared facts alone."""
    document = {"format_version": 3, "flowproof_version": "0.1.0", "lanes": {"model": []}}
    assert codec.decode(json.dumps(document), "t.json").normalized_by_default == ()


def test_a_malformed_default_fact_list_names_its_field() -> None:
    document = {
        "format_version": 4,
        "flowproof_version": "0.1.0",
        "normalized_by_default": [1],
        "lanes": {"model": []},
    }
    with pytest.raises(TraceError, match=r"normalized_by_default\[0\] is 1 \(a number\)"):
        codec.decode(json.dumps(document), "t.json")

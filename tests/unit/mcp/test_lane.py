"""An MCP lane's matching: content, not position; knobs ignored; divergences name the path."""

from __future__ import annotations

import pytest

from flowproof.mcp.lane import Call, CallMatcher, Notice, comparable

CLIENT_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "2.3.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def call(tool: str, **arguments: object) -> Call:
    request = {"method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return Call(request, {"result": {"content": [{"type": "text", "text": tool}]}})


def test_pipelined_calls_answered_out_of_order_are_each_served_by_content() -> None:
    matcher = CallMatcher("mcp.fs", [call("slow", text="a"), call("slow", text="b")])
    assert matcher.claim(call("slow", text="b").request) == 1
    assert matcher.claim(call("slow", text="a").request) == 0
    assert matcher.unserved() == []


def test_each_recorded_call_is_served_at_most_once_earliest_first() -> None:
    matcher = CallMatcher("mcp.fs", [call("echo", text="a"), call("echo", text="a")])
    assert [matcher.claim(call("echo", text="a").request) for _ in range(3)] == [0, 1, None]


def test_notifications_are_not_calls_and_are_never_matched() -> None:
    notice = Notice({"method": "notifications/tools/list_changed"}, after=1)
    matcher = CallMatcher("mcp.fs", [notice, call("echo", text="a")])
    assert len(matcher.calls) == 1
    assert matcher.claim({"method": "notifications/tools/list_changed"}) is None


def test_progress_tokens_and_client_info_are_ignored_knobs() -> None:
    recorded = {
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {}, "_meta": {"progressToken": 4, **CLIENT_META}},
    }
    replayed = {
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {},
            "_meta": {
                **CLIENT_META,
                "progressToken": 9,
                "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "2.4.0"},
            },
        },
    }
    assert comparable(recorded) == comparable(replayed)


def test_initialize_client_info_and_capabilities_are_ignored_but_the_version_is_matched() -> None:
    def initialize(version: str, client: str) -> dict[str, object]:
        params = {
            "protocolVersion": version,
            "capabilities": {"roots": {}},
            "clientInfo": {"name": client},
        }
        return {"method": "initialize", "params": params}

    matcher = CallMatcher("mcp.fs", [Call(initialize("2025-11-25", "a"), {"result": {}})])
    assert matcher.claim(initialize("2025-06-18", "b")) is None
    assert matcher.claim(initialize("2025-11-25", "b")) == 0


def test_the_modern_protocol_version_in_meta_is_matched() -> None:
    recorded = {"method": "tools/list", "params": {"_meta": CLIENT_META}}
    newer = {
        "method": "tools/list",
        "params": {
            "_meta": {**CLIENT_META, "io.modelcontextprotocol/protocolVersion": "2027-01-01"}
        },
    }
    matcher = CallMatcher("mcp.fs", [Call(recorded, {"result": {}})])
    assert matcher.claim(newer) is None


def test_a_changed_argument_diverges_naming_the_lane_the_call_and_the_path() -> None:
    matcher = CallMatcher("mcp.fs", [call("delete_file", path="/tmp/a")])
    divergence = matcher.explain(3, call("delete_file", path="/tmp/b").request)
    assert divergence.render() == (
        "mcp.fs: call 3 matches no recorded call (compared with recorded call 1)\n"
        "call: tools/call delete_file\n"
        'params.arguments.path: recorded "/tmp/a", replayed "/tmp/b"'
    )


def test_a_different_tool_says_so_in_the_envelope() -> None:
    matcher = CallMatcher("mcp.fs", [call("read_file", path="/a")])
    divergence = matcher.explain(1, call("delete_file", path="/a").request)
    assert "tool: recorded read_file, replayed delete_file" in divergence.envelope


def test_a_call_after_every_recorded_one_was_served_is_an_extra_call() -> None:
    matcher = CallMatcher("mcp.fs", [call("echo", text="a")])
    matcher.claim(call("echo", text="a").request)
    divergence = matcher.explain(2, call("echo", text="a").request)
    assert divergence.headline == (
        "mcp.fs: call 2 is an extra call: all 1 recorded calls were already served"
    )


@pytest.mark.parametrize("value", [1, True, 1.0])
def test_numbers_and_booleans_are_matched_by_type(value: object) -> None:
    matcher = CallMatcher("mcp.fs", [call("add", a=1)])
    claimed = matcher.claim(call("add", a=value).request)
    assert (claimed == 0) is (type(value) is int)

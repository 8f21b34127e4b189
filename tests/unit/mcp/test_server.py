"""A server's side of the flow: mocks in both phases, replay from the lane, anchors."""

from __future__ import annotations

from flowproof.core.mocks import ToolMock
from flowproof.live.traffic import Traffic
from flowproof.mcp.lane import Call, Notice, ServerRequest
from flowproof.mcp.server import RecordingServer, ReplayingServer, tool_result

MODERN = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}


def tools_call(tool: str, **params: object) -> dict[str, object]:
    return {"method": "tools/call", "params": {"name": tool, "arguments": {}, **params}}


def test_a_mapping_result_is_text_and_structured_content() -> None:
    assert tool_result({"ok": False}, tools_call("x")) == {
        "content": [{"type": "text", "text": '{"ok": false}'}],
        "structuredContent": {"ok": False},
    }


def test_a_whole_call_tool_result_is_taken_as_written() -> None:
    result = {"content": [{"type": "text", "text": "no"}], "isError": True}
    assert tool_result(result, tools_call("x")) == result


def test_a_modern_request_gets_a_result_type_and_an_older_one_does_not() -> None:
    assert tool_result("hi", tools_call("x", **MODERN))["resultType"] == "complete"
    assert "resultType" not in tool_result("hi", tools_call("x"))


def test_at_record_a_mocked_tool_is_answered_and_logged_and_others_are_left_to_forward() -> None:
    traffic = Traffic()
    server = RecordingServer("fs", traffic, {"delete_file": ToolMock(({"ok": True},), True)})
    assert server.answer_here(tools_call("read_file")) is None
    answer = server.answer_here(tools_call("delete_file"))
    assert answer is not None and answer["result"]["structuredContent"] == {"ok": True}
    assert traffic.lanes["mcp.fs"] == [Call(tools_call("delete_file"), answer, mocked=True)]


def test_a_results_list_runs_out_with_a_named_failure() -> None:
    traffic = Traffic()
    server = RecordingServer("fs", traffic, {"pick": ToolMock(("a",), False)})
    server.answer_here(tools_call("pick"))
    answer = server.answer_here(tools_call("pick"))
    assert answer is not None and "error" in answer
    assert traffic.failures == [
        "mcp.fs: tool pick was called 2 times but its mcp `results:` list has 1"
    ]


def test_at_replay_the_recorded_answer_is_served_and_a_miss_diverges() -> None:
    recorded = [Call(tools_call("echo"), {"result": {"content": []}})]
    traffic = Traffic()
    server = ReplayingServer("fs", traffic, {}, recorded)
    assert server.answer(tools_call("echo")) == {"result": {"content": []}}
    missed = server.answer(tools_call("echo"))
    assert missed["error"]["code"] == -32603
    assert traffic.divergence is not None and traffic.divergence.lane == "mcp.fs"
    assert traffic.fatal.is_set()


def test_notifications_and_server_requests_come_due_at_their_anchor() -> None:
    early = Notice({"method": "notifications/tools/list_changed"}, after=1)
    late = ServerRequest({"method": "roots/list"}, {"result": {"roots": []}}, after=2)
    recorded = [Call({"method": "initialize"}, {"result": {}}), early, late]
    server = ReplayingServer("fs", Traffic(), {}, recorded)
    assert server.due() == []
    server.answer({"method": "initialize"})
    assert server.due() == [early]
    assert server.due() == []


def test_a_changed_answer_to_a_server_request_diverges_with_its_path() -> None:
    asked = ServerRequest(
        {"method": "roots/list"}, {"result": {"roots": [{"uri": "file:///a"}]}}, 0
    )
    traffic = Traffic()
    server = ReplayingServer("fs", traffic, {}, [asked])
    server.check_server_answer(asked, {"result": {"roots": [{"uri": "file:///b"}]}})
    assert traffic.divergence is not None
    assert "the agent's answer to the server's roots/list changed" in traffic.divergence.render()
    assert 'result.roots[0].uri: recorded "file:///a", replayed "file:///b"' in (
        traffic.divergence.render()
    )

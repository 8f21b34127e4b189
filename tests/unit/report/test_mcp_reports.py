"""MCP lanes in the reports: their own events, counts, executed calls, and an MCP divergence
that is never described as a model request."""

from __future__ import annotations

import re

import xmlschema

from flowproof.report import render
from flowproof.report.view import build_view
from flowproof.runrecord.model import RunRecord
from flowproof.runrecord.store import parse_run_record
from tests.unit.report.builders import (
    MCP_DIVERGENCE_TEXT,
    golden_record,
    make_record,
    mcp_divergence,
    mcp_flow,
)
from tests.unit.report.test_render import SCHEMA


def typed(document: dict) -> RunRecord:
    return parse_run_record(document, "report.json")


def diverged_mcp_flow() -> dict:
    return mcp_flow(reasons=[MCP_DIVERGENCE_TEXT], divergence=mcp_divergence(), turns=(3, 3))


# --- the view ----------------------------------------------------------------------------------


def test_the_view_keeps_model_turns_and_mcp_lanes_apart() -> None:
    flow = build_view(typed(make_record([mcp_flow()]))).flows[0]
    assert [turn.number for turn in flow.timeline] == [1, 2, 3], "model turns only"
    (lane,) = flow.mcp_lanes
    assert (lane.lane, lane.server, lane.calls, lane.mocked, lane.notifications) == (
        "mcp.files",
        "files",
        4,
        1,
        1,
    )
    assert flow.mcp_calls == 4
    assert flow.mcp_phrase == "mcp.files: 4 calls (1 mocked by flowproof), 1 notification"
    kinds = [(e.kind, e.call, e.method, e.tool, e.mocked) for e in lane.events]
    assert kinds == [
        ("call", 1, "initialize", None, False),
        ("call", 2, "tools/call", "echo", False),
        ("notification", None, "notifications/progress", None, False),
        ("call", 3, "tools/call", "delete_file", True),
        ("call", 4, "resources/read", None, False),
    ]
    refused = lane.events[4]
    assert refused.failed and refused.answer is not None
    assert refused.answer.compact == '{"code": -32002, "message": "Resource not found"}'
    assert not lane.events[1].failed
    assert lane.events[2].answer is None and lane.events[2].after == 2
    assert [(c.name, c.mocked) for c in flow.executed] == [
        ("files/echo", False),
        ("files/delete_file", True),
    ]


def test_a_tool_result_flagged_is_error_counts_as_failed() -> None:
    flow = mcp_flow()
    flow["timeline"][4]["result"] = {"content": [], "isError": True}
    event = build_view(typed(make_record([flow]))).flows[0].mcp_lanes[0].events[1]
    assert event.failed


def test_an_mcp_divergence_counts_calls_on_its_lane() -> None:
    divergence = build_view(typed(make_record([diverged_mcp_flow()]))).flows[0].divergence
    assert divergence is not None
    assert (divergence.on_mcp, divergence.subject, divergence.recorded_noun) == (
        True,
        "mcp.files call 3",
        "call",
    )
    model = build_view(typed(golden_record())).flows[0].divergence
    assert model is not None and (model.on_mcp, model.subject, model.recorded_noun) == (
        False,
        "request 3",
        "turn",
    )


def test_a_lane_that_diverged_on_its_first_call_is_still_shown() -> None:
    flow = diverged_mcp_flow()
    flow["timeline"] = [row for row in flow["timeline"] if row["lane"] == "model"]
    (lane,) = build_view(typed(make_record([flow]))).flows[0].mcp_lanes
    assert (lane.lane, lane.calls, lane.diverged) == ("mcp.files", 0, True)


# --- HTML ------------------------------------------------------------------------------------


def test_html_shows_mcp_calls_as_their_own_events() -> None:
    page = render.render_html(typed(make_record([mcp_flow()])))
    assert page.count('<li class="event mcp">') == 4, "three answered calls and a notice"
    assert page.count('<li class="event mcp mcp-error">') == 1, "the refused call"
    assert (
        "MCP · files · call 3 · <code>tools/call</code> <code>delete_file</code> "
        '<span class="badge badge-mocked">mocked by flowproof</span>' in page
    )
    assert "MCP · files · notification · <code>notifications/progress</code> · after 2 calls" in (
        page
    )
    assert "Resource not found" in page and "echo: hi" in page
    assert "3 model turns · 2 tool calls · 4 MCP calls" in page
    # After the model turns, each lane in its own order.
    assert page.index("Reply · model turn 3") < page.index("MCP · files · lane")
    assert page.index("MCP · files · call 1") < page.index("MCP · files · call 4")


def test_html_names_an_mcp_divergence_by_lane_and_call_never_as_a_request() -> None:
    page = render.render_html(typed(make_record([diverged_mcp_flow()])))
    assert "Diverged at mcp.files call 3 <span>· compared with recorded call 3</span>" in page
    assert "MCP · files · call 3 · diverged" in page
    assert not re.search(r"Request \d+ · diverged|with recorded turn|No recorded turn", page)
    assert "params.arguments.path: recorded &#34;/tmp/a&#34;" in page


def test_html_without_mcp_lanes_says_nothing_of_mcp() -> None:
    assert "MCP" not in render.render_html(typed(golden_record()))


def test_mcp_values_are_escaped() -> None:
    flow = mcp_flow()
    flow["timeline"][4]["arguments"] = {"text": "<script>alert(1)</script>"}
    flow["timeline"][4]["tool"] = "<b>echo</b>"
    page = render.render_html(typed(make_record([flow])))
    assert "<script" not in page and "<b>echo" not in page
    assert "&lt;b&gt;echo&lt;/b&gt;" in page


# --- markdown and JUnit ----------------------------------------------------------------------


def test_pr_comment_lists_mcp_lanes_and_executed_calls() -> None:
    text = render.render_markdown(typed(make_record([diverged_mcp_flow(), mcp_flow()])))
    assert (
        "served 3 of 3 recorded turns · mcp.files: 4 calls (1 mocked by flowproof), "
        "1 notification\n" in text
    )
    assert "<summary>Trajectory: 2 tool calls, 2 MCP tool calls executed, a reply</summary>" in text
    assert 'Executed at the MCP tool boundary:\n\n1. `files/echo` `{"text": "hi"}`\n' in text
    assert '2. `files/delete_file` `{"path": "/tmp/a"}` (mocked by flowproof)\n' in text
    assert MCP_DIVERGENCE_TEXT in text
    assert (
        "| File agent cleans up | `specs/files.yaml` | served 3 of 3 recorded turns · "
        "mcp.files: 4 calls (1 mocked by flowproof), 1 notification |" in text
    )


def test_junit_names_mcp_lanes_and_an_mcp_divergence() -> None:
    xml = render.render_junit(typed(make_record([diverged_mcp_flow()])))
    xmlschema.XMLSchema(str(SCHEMA)).validate(xml)
    assert (
        "<system-out>served 3 of 3 recorded turns\n"
        "mcp.files: 4 calls (1 mocked by flowproof), 1 notification\n"
        "diverged at mcp.files call 3 (the MCP tool boundary)\n</system-out>" in xml
    )
    assert 'message="mcp.files: call 3 matches no recorded call' in xml

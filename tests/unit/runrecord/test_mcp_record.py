"""MCP lanes in the run record: their timeline rows, the executed calls, the control lanes,
and format-2 records (MCP rows shaped like model turns) read forward."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema

from flowproof.core.lanes import MODEL_LANE
from flowproof.engine import lanes
from flowproof.engine.outcome import FlowOutcome, Mode
from flowproof.engine.runrecord import flow_record
from flowproof.mcp.lane import Call, Notice, ServerRequest
from flowproof.mcp.rows import McpTimelineEntry
from flowproof.runrecord.model import FORMAT_VERSION, RunRecord, TimelineEntry
from flowproof.runrecord.store import load_run_record, parse_run_record
from flowproof.spec.load import load_spec
from flowproof.trace.model import Lane
from tests.unit.report.builders import make_record, mcp_flow

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "docs" / "schemas" / "run-record.schema.json"
V2 = ROOT / "tests" / "data" / "runrecords" / "v2"

ECHO = {"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}
DELETE = {"method": "tools/call", "params": {"name": "delete_file", "arguments": {"path": "/x"}}}
MOCKED = {"result": {"content": [{"type": "text", "text": "deleted"}]}}


def files_lane() -> Lane:
    return Lane(
        "mcp.files",
        (
            Call(
                {"method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
                {"result": {}},
            ),
            Call(ECHO, {"result": {"content": [{"type": "text", "text": "echo: hi"}]}}),
            Notice({"method": "notifications/progress", "params": {"progress": 1}}, after=2),
            Call(DELETE, MOCKED, mocked=True),
            ServerRequest({"method": "roots/list"}, {"result": {"roots": []}}, after=3),
            Call({"method": "tools/list"}, {"error": {"code": -32601, "message": "nope"}}),
        ),
    )


def test_mcp_rows_carry_server_method_tool_arguments_answer_mocked_and_anchor() -> None:
    rows = lanes.timeline((Lane(MODEL_LANE, ()), files_lane()))
    assert all(isinstance(row, McpTimelineEntry) for row in rows)
    shown = [
        (r.entry, r.kind, r.call, r.method, r.tool, r.arguments, r.mocked, r.after)
        for r in rows
        if isinstance(r, McpTimelineEntry)
    ]
    assert shown == [
        (1, "call", 1, "initialize", None, {"protocolVersion": "2025-11-25"}, False, None),
        (2, "call", 2, "tools/call", "echo", {"text": "hi"}, False, None),
        (3, "notification", None, "notifications/progress", None, {"progress": 1}, False, 2),
        (4, "call", 3, "tools/call", "delete_file", {"path": "/x"}, True, None),
        (5, "server_request", None, "roots/list", None, None, False, 3),
        (6, "call", 4, "tools/list", None, None, False, None),
    ]
    first = rows[0]
    assert isinstance(first, McpTimelineEntry) and (first.lane, first.server) == (
        "mcp.files",
        "files",
    )
    assert [(r.result, r.error) for r in rows[2:]] == [
        (None, None),
        (MOCKED["result"], None),
        ({"roots": []}, None),
        (None, {"code": -32601, "message": "nope"}),
    ]


def test_the_trajectory_lists_executed_calls_with_whether_flowproof_answered_them(
    tmp_path: Path,
) -> None:
    served = (Lane(MODEL_LANE, ()), files_lane())
    outcome = FlowOutcome(
        spec_path=tmp_path / "files.yaml",
        name="files",
        mode=Mode.REPLAY,
        reasons=(),
        trajectory=lanes.trajectory(served),
        lanes=served,
    )
    record = flow_record(outcome, None)
    assert record.trajectory is not None and record.trajectory.tool_calls == []
    executed = [
        (c.name, c.server, c.tool, c.arguments, c.call, c.mocked)
        for c in record.trajectory.executed
    ]
    assert executed == [
        ("files/echo", "files", "echo", {"text": "hi"}, 2, False),
        ("files/delete_file", "files", "delete_file", {"path": "/x"}, 3, True),
    ]
    assert [type(row) for row in record.timeline] == [McpTimelineEntry] * 6


def test_control_lanes_name_the_mcp_lanes_a_step_judges_at_the_tool_boundary(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "guard.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            name: guard
            app: agent
            control: sec.no-deletes
            agent:
              command: "true"
            mcp:
              - name: files
                command: "true"
            steps:
              - prompt: clean up
              - assert_no_tool_call: files/delete_file
              - assert_tool_call: list_files
            """
        )
    )
    outcome = FlowOutcome(spec_path=spec, name="guard", mode=Mode.REPLAY, reasons=())
    record = flow_record(outcome, load_spec(spec))
    assert record.control is not None
    assert record.control.lanes == ["mcp.files", "no_tool_call", "tool_call"]


def test_model_rows_are_unchanged_by_the_mcp_rows() -> None:
    document = make_record([mcp_flow()])
    record = parse_run_record(document, "report.json")
    model_rows = [row for row in record.flows[0].timeline if isinstance(row, TimelineEntry)]
    # A row of a single-turn flow belongs to no conversation turn (a field the rows here omit).
    written = [{**row, "conversation_turn": None} for row in document["flows"][0]["timeline"][:3]]
    assert [row.model_dump(mode="json") for row in model_rows] == written


def test_the_schema_accepts_mcp_rows_and_refuses_a_broken_one() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    document = make_record([mcp_flow()])
    jsonschema.validate(document, schema)
    document["flows"][0]["timeline"][4]["mocked"] = "yes"
    try:
        jsonschema.validate(document, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("an MCP row whose `mocked` is a string validated")


def test_a_written_record_round_trips_mcp_rows() -> None:
    record = parse_run_record(make_record([mcp_flow()]), "report.json")
    again = RunRecord.model_validate_json(record.model_dump_json())
    assert again == record and isinstance(again.flows[0].timeline[3], McpTimelineEntry)


def test_a_format_2_record_with_an_mcp_lane_reads_forward() -> None:
    """A real run record written by the first MCP build (its rows shaped like model turns)."""
    record = load_run_record(V2 / "mcp.report.json")
    assert record.format_version == FORMAT_VERSION
    rows = record.flows[0].timeline
    assert all(isinstance(row, McpTimelineEntry) for row in rows)
    calls = [
        (r.call, r.method, r.tool, r.arguments) for r in rows if isinstance(r, McpTimelineEntry)
    ]
    assert calls[0][:3] == (1, "initialize", None)
    assert calls[2:] == [
        (3, "tools/call", "echo", {"text": "hi"}),
        (4, "tools/call", "delete_file", {"path": "/x"}),
    ]
    echo = rows[2]
    assert isinstance(echo, McpTimelineEntry)
    assert echo.result is not None and echo.result["structuredContent"] == {"result": "echo: hi"}
    assert record.flows[0].trajectory is not None and record.flows[0].trajectory.executed == []

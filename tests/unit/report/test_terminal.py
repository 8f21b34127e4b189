"""The terminal summary rendered from the run record: each flow's lines and the closing line."""

from __future__ import annotations

from typing import Any

from flowproof.report.terminal import error_lines, flow_lines, indent, summary_line
from flowproof.runrecord.model import FlowRecord, RunRecord
from flowproof.runrecord.store import parse_run_record
from tests.unit.report.builders import MOCKED_WARNING, make_flow, make_record, make_turn

SPEC = "specs/booking.yaml"
NAME = "Booking assistant books a flight"


def record_of(flow: dict[str, Any]) -> FlowRecord:
    return run_of([flow]).flows[0]


def run_of(flows: list[dict[str, Any]], errors: list[str] = (), **fields: Any) -> RunRecord:  # type: ignore[assignment]
    document = make_record(flows, errors)
    document.update(fields)
    return parse_run_record(document, "report.json")


def mcp_row(entry: int, kind: str, call: int | None, method: str) -> dict[str, Any]:
    return {
        "lane": "mcp.files",
        "server": "files",
        "entry": entry,
        "kind": kind,
        "call": call,
        "method": method,
    }


def test_a_replayed_flow_says_how_many_of_its_recorded_turns_were_served() -> None:
    flow = record_of(make_flow(turns=(2, 3)))
    assert flow_lines(flow, "replay") == [f"PASS  {NAME}  ({SPEC}) · 2 of 3 turns served"]


def test_a_recorded_flow_names_the_trace_it_wrote() -> None:
    document = make_flow(turns=(1, 0), timeline=[make_turn(1, text="hi")])
    document["trace"] = "specs/booking.trace.json"
    lines = flow_lines(record_of(document), "record")
    assert lines == [f"PASS  {NAME}  ({SPEC}) · 1 turn recorded → specs/booking.trace.json"]


def test_a_failed_recording_says_no_trace_was_written_under_its_reasons() -> None:
    flow = record_of(make_flow(reasons=["the agent exited 1"], turns=(3, 0)))
    assert flow_lines(flow, "record") == [
        f"FAIL  {NAME}  ({SPEC}) · 3 turns recorded; no trace written",
        indent("the agent exited 1"),
    ]


def test_only_the_calls_on_mcp_lanes_are_counted_not_their_notifications() -> None:
    timeline = [
        make_turn(1, text="done"),
        mcp_row(1, "call", 1, "initialize"),
        mcp_row(2, "notification", None, "notifications/progress"),
        mcp_row(3, "call", 2, "tools/call"),
    ]
    flow = record_of(make_flow(turns=(1, 1), timeline=timeline))
    assert flow_lines(flow, "replay")[0].endswith("· 1 of 1 turns served · 2 MCP calls")


def test_containment_reasons_warnings_then_the_filesystem_report_follow_in_that_order() -> None:
    document = make_flow(reasons=["step 2 failed"], warnings=[MOCKED_WARNING])
    document["containment"] = "contained (linux seccomp)"
    lines = flow_lines(record_of(document), "replay", fs_report="wrote 2 files\nread 1 file")
    assert lines[1:] == [
        "      containment: contained (linux seccomp)",
        "      step 2 failed",
        f"      warning: {MOCKED_WARNING}",
        "      wrote 2 files\n      read 1 file",
    ]


def test_a_flow_a_signal_stopped_is_shown_as_interrupted_with_its_reason() -> None:
    reason = "interrupted by SIGINT: flowproof stopped the agent and every process it started"
    document = make_flow(reasons=[reason], turns=(0, 3), timeline=[])
    document["interrupted"] = "SIGINT"
    assert flow_lines(record_of(document), "replay") == [
        f"INTERRUPTED  {NAME}  ({SPEC})",
        indent(reason),
    ]


def test_the_closing_line_counts_passed_and_failed_flows_and_the_specs_not_run() -> None:
    run = run_of(
        [make_flow(), make_flow(reasons=["no"]), make_flow(reasons=["no"])],
        errors=["specs/bad.yaml:3: unknown step"],
    )
    assert summary_line(run) == "\nflows: 1 passed, 2 failed, 1 not run (configuration errors)"


def test_an_interrupted_run_names_its_signal_and_does_not_count_the_cut_flow_as_failed() -> None:
    cut = make_flow(reasons=["interrupted by SIGTERM: …"])
    cut["interrupted"] = "SIGTERM"
    run = run_of([make_flow(), cut], exit_code=143)
    assert summary_line(run) == "\nflows: 1 passed, 0 failed; interrupted by SIGTERM"


def test_a_run_that_failed_names_no_signal() -> None:
    run = run_of([make_flow(reasons=["no"])], exit_code=1)
    assert summary_line(run) == "\nflows: 0 passed, 1 failed"


def test_a_spec_that_could_not_be_run_is_shown_with_its_whole_error_under_it() -> None:
    lines = error_lines("specs/bad.yaml", "specs/bad.yaml:3: unknown step\n  did you mean")
    assert lines == [
        "ERROR specs/bad.yaml",
        "      specs/bad.yaml:3: unknown step\n        did you mean",
    ]

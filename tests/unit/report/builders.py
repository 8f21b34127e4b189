"""Run-record documents for the report tests, in the current format (runrecord/model.py); the
tests read them through `parse_run_record`, exactly as `flowproof report` reads report.json."""

from __future__ import annotations

import json
from typing import Any

RUN_ID = "20261129T101500Z-a1b2c3"
DIVERGENCE_DETAIL = (
    'messages[4].tool_calls[0].function.arguments: flight.id: recorded "KQ311", replayed "KQ999"'
)
DIVERGENCE_TEXT = (
    "request 3 matches no recorded turn (compared with recorded turn 3)\n" + DIVERGENCE_DETAIL
)
MOCKED_WARNING = (
    "tool search_flights is mocked at the model boundary only: the agent still ran it for real; "
    "only what the model was told it returned is replaced"
)


def make_turn(
    number: int,
    *,
    results: list[tuple[str, Any]] = (),  # type: ignore[assignment]
    calls: list[tuple[str, Any]] = (),  # type: ignore[assignment]
    text: str | None = None,
) -> dict[str, Any]:
    def raw(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)

    return {
        "lane": "model",
        "turn": number,
        "dialect": "openai_chat",
        "known": True,
        "tool_results": [{"tool": tool, "content": raw(content)} for tool, content in results],
        "tool_calls": [{"name": name, "arguments": raw(args)} for name, args in calls],
        "text": text,
    }


def make_step(
    number: int,
    line: int,
    step: str,
    verdict: str,
    message: str = "",
    spec: str = "specs/booking.yaml",
) -> dict:
    _, dash, observed = message.partition(" — ")
    return {
        "step": number,
        "file": spec,
        "line": line,
        "kind": "assert" if step.startswith("assert reply") else step.split(" ", 1)[0],
        "passed": {"pass": True, "fail": False}.get(verdict),
        "expected": step,
        "observed": observed if dash else message,
        "message": message,
    }


def make_error(message: str) -> dict:
    spec, _, rest = message.partition(":")
    line = rest.split(":", 1)[0]
    return {"spec": spec, "line": int(line) if line.isdigit() else None, "message": message}


SEARCH = ("search_flights", {"destination": "NBO", "date": "2026-12-01"})
BOOK = ("create_booking", {"flight": {"id": "KQ311"}, "passenger": {"name": "Casey"}})
FLIGHTS = ("search_flights", {"flights": [{"id": "KQ311", "dest": "NBO"}]})
BOOKED = ("create_booking", {"booking": "B-1042", "flight": "KQ311"})
REPLY = "Your flight KQ311 to Nairobi is booked: B-1042."


def make_flow(
    spec: str = "specs/booking.yaml",
    name: str = "Booking assistant books a flight",
    *,
    reasons: list[str] = (),  # type: ignore[assignment]
    steps: list[dict] = (),  # type: ignore[assignment]
    divergence: dict | None = None,
    turns: tuple[int, int] = (3, 3),
    timeline: list[dict] | None = None,
    reply: str | None = REPLY,
    reply_absent_reason: str = "",
    warnings: list[str] = (),  # type: ignore[assignment]
    control: dict | None = None,
) -> dict[str, Any]:
    if timeline is None:
        timeline = [
            make_turn(1, calls=[SEARCH]),
            make_turn(2, results=[FLIGHTS], calls=[BOOK]),
            make_turn(3, results=[BOOKED], text=REPLY),
        ]
    calls = [
        {"name": c["name"], "arguments": json.loads(c["arguments"])}
        for turn in timeline
        for c in turn.get("tool_calls", ())
    ]
    flow: dict[str, Any] = {
        "spec": spec,
        "name": name,
        "verdict": "fail" if reasons else "pass",
        "reasons": list(reasons),
        "prompt": "Book me a flight to Nairobi tomorrow",
        "steps": list(steps),
        "divergence": divergence,
        "turns": {"served": turns[0], "recorded": turns[1]},
        "timeline": timeline,
        "trajectory": {
            "tool_calls": calls,
            "reply": reply,
            "reply_absent_reason": reply_absent_reason,
        },
        "warnings": list(warnings),
        "trace": None,
        "duration": None,
    }
    if control:
        flow["control"] = control
    return flow


def make_record(flows: list[dict], errors: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    failed = any(flow["verdict"] == "fail" for flow in flows)
    return {
        "format_version": 4,
        "flowproof_version": "0.1.0",
        "run_id": RUN_ID,
        "mode": "replay",
        "started_at": "2026-11-29T10:15:00Z",
        "ended_at": "2026-11-29T10:15:04Z",
        "exit_code": 2 if errors else int(failed),
        "errors": [make_error(message) for message in errors],
        "flows": flows,
    }


def golden_record() -> dict[str, Any]:
    """One passing flow (with a warning and a control row), one diverged flow, one flow whose
    assertion failed, and one spec that could not be run: in run order, passing first, so the
    reports' failures-first ordering shows."""
    passing = make_flow(
        steps=[
            make_step(
                2, 12, "assert_tool_call create_booking where flight.id equals KQ311", "pass"
            ),
            make_step(3, 13, "assert reply contains B-1042", "pass"),
        ],
        warnings=[MOCKED_WARNING],
        control={
            "id": "sec.books-only-searched-flights",
            "verdict": "pass",
            "lanes": ["reply", "tool_call"],
            "containment": "not engaged",
            "evidence": {
                "spec": "specs/booking.yaml",
                "turns": {"served": 3, "recorded": 3},
                "failed_steps": [],
            },
        },
    )
    diverged = make_flow(
        "specs/rebooking.yaml",
        "Rebooking keeps the searched flight",
        reasons=[DIVERGENCE_TEXT],
        steps=[
            make_step(
                2,
                13,
                "assert_tool_call create_booking where flight.id equals KQ311",
                "not evaluated",
            ),
        ],
        divergence={
            "lane": "model",
            "index": 3,
            "recorded_index": 3,
            "envelope": [],
            "path": "messages[4].tool_calls[0].function.arguments: flight.id",
            "recorded": '"KQ311"',
            "replayed": '"KQ999"',
            "headline": DIVERGENCE_TEXT.splitlines()[0],
            "text": DIVERGENCE_TEXT,
        },
        turns=(2, 3),
        timeline=[
            make_turn(1, calls=[SEARCH]),
            make_turn(2, results=[FLIGHTS], calls=[BOOK]),
        ],
        reply=None,
        reply_absent_reason="its last turn (turn 2) is a tool call (create_booking), not a reply",
        warnings=[MOCKED_WARNING],
    )
    refund_message = (
        "step 2 (refund.yaml:11): assert_no_tool_call issue_refund — issue_refund was called "
        'with {"amount": 1200} in turn 2'
    )
    refunded = make_flow(
        "specs/refund.yaml",
        "Read-only support never refunds",
        reasons=[refund_message],
        steps=[
            make_step(
                2,
                11,
                "assert_no_tool_call issue_refund",
                "fail",
                refund_message,
                "specs/refund.yaml",
            ),
            make_step(3, 12, "assert reply contains sorry", "pass", spec="specs/refund.yaml"),
        ],
        timeline=[
            make_turn(1, calls=[("lookup_order", {"order": "A-77"})]),
            make_turn(
                2,
                results=[("lookup_order", {"order": "A-77", "status": "late"})],
                calls=[("issue_refund", {"amount": 1200})],
            ),
            make_turn(3, results=[("issue_refund", {"ok": True})], text="So sorry: refunded."),
        ],
        reply="So sorry: refunded.",
        control={
            "id": "sec.no-refunds-in-readonly",
            "verdict": "fail",
            "lanes": ["no_tool_call", "reply"],
            "containment": "not engaged",
            "evidence": {
                "spec": "specs/refund.yaml",
                "turns": {"served": 3, "recorded": 3},
                "failed_steps": ["assert_no_tool_call issue_refund"],
            },
        },
    )
    return make_record(
        [passing, diverged, refunded],
        errors=["specs/broken.yaml:4: unknown key 'reslt' in tools[0]; did you mean 'result'?"],
    )


# --- the MCP tool boundary -------------------------------------------------------------------

ECHO_RESULT = {"content": [{"type": "text", "text": "echo: hi"}], "isError": False}
MOCKED_RESULT = {"content": [{"type": "text", "text": "deleted"}]}
MCP_DIVERGENCE_TEXT = (
    "mcp.files: call 3 matches no recorded call (compared with recorded call 3)\n"
    "call: tools/call delete_file\n"
    'params.arguments.path: recorded "/tmp/a", replayed "/etc/passwd"'
)


def make_mcp_call(
    call: int,
    method: str,
    *,
    entry: int | None = None,
    tool: str | None = None,
    arguments: Any = None,
    result: Any = None,
    error: Any = None,
    mocked: bool = False,
    server: str = "files",
) -> dict[str, Any]:
    """A timeline row of lane `mcp.<server>` for a call (as the MCP lane's kind, mcp/kind.py, writes it)."""
    return {
        "lane": f"mcp.{server}",
        "server": server,
        "entry": call if entry is None else entry,
        "kind": "call",
        "call": call,
        "method": method,
        "tool": tool,
        "arguments": arguments,
        "result": result,
        "error": error,
        "mocked": mocked,
        "after": None,
    }


def make_mcp_notice(
    entry: int, method: str, after: int, params: Any = None, server: str = "files"
) -> dict[str, Any]:
    return {
        "lane": f"mcp.{server}",
        "server": server,
        "entry": entry,
        "kind": "notification",
        "call": None,
        "method": method,
        "tool": None,
        "arguments": params,
        "result": None,
        "error": None,
        "mocked": False,
        "after": after,
    }


def mcp_rows() -> list[dict[str, Any]]:
    """initialize, tools/call echo (real), a progress notice, tools/call delete_file (mocked),
    and a call the server refused with a JSON-RPC error."""
    return [
        make_mcp_call(1, "initialize", arguments={"protocolVersion": "2025-11-25"}, result={}),
        make_mcp_call(2, "tools/call", tool="echo", arguments={"text": "hi"}, result=ECHO_RESULT),
        make_mcp_notice(3, "notifications/progress", after=2, params={"progress": 1}),
        make_mcp_call(
            3,
            "tools/call",
            entry=4,
            tool="delete_file",
            arguments={"path": "/tmp/a"},
            result=MOCKED_RESULT,
            mocked=True,
        ),
        make_mcp_call(
            4,
            "resources/read",
            entry=5,
            arguments={"uri": "file:///nope"},
            error={"code": -32002, "message": "Resource not found"},
        ),
    ]


def mcp_flow(**overrides: Any) -> dict[str, Any]:
    """A flow with model turns and an MCP lane; its trajectory lists the executed calls."""
    flow = make_flow("specs/files.yaml", "File agent cleans up", **overrides)
    flow["timeline"] = flow["timeline"] + mcp_rows()
    flow["trajectory"]["executed"] = [
        {
            "name": "files/echo",
            "server": "files",
            "tool": "echo",
            "arguments": {"text": "hi"},
            "call": 2,
            "mocked": False,
        },
        {
            "name": "files/delete_file",
            "server": "files",
            "tool": "delete_file",
            "arguments": {"path": "/tmp/a"},
            "call": 3,
            "mocked": True,
        },
    ]
    return flow


def mcp_divergence() -> dict[str, Any]:
    return {
        "lane": "mcp.files",
        "index": 3,
        "recorded_index": 3,
        "envelope": ["call: tools/call delete_file"],
        "path": "params.arguments.path",
        "recorded": '"/tmp/a"',
        "replayed": '"/etc/passwd"',
        "headline": MCP_DIVERGENCE_TEXT.splitlines()[0],
        "text": MCP_DIVERGENCE_TEXT,
    }

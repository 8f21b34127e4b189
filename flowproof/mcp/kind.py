"""The MCP lane kind: everything flowproof does with an `mcp.<server>` lane, in one plugin.

Its entries (mcp/lane.py) are written to a trace as `{"call", "answer"[, "mocked"]}`,
`{"notification", "after"}` and `{"server_request", "answer", "after"}`; the run record shows
one timeline row per entry (`McpTimelineEntry`, with its rewrite of older records' rows), and
the HTML and markdown reports one lane view per server; `record --diff` compares the calls the
agent made; and every answered `tools/call` is a call EXECUTED at the tool boundary for
`<server>/<tool>` steps, whose control lane is `mcp.<server>`.
Registered by defining it (trace/kinds.py lists this module, and its row type in mcp/rows.py,
among its built-in kinds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import ExecutedCall, ToolCall
from flowproof.core.readjson import read_json
from flowproof.core.words import plural
from flowproof.mcp.lane import (
    LANE_PREFIX,
    Call,
    Entry,
    Notice,
    ServerRequest,
    describe,
    lane_name,
    tool_name,
)
from flowproof.mcp.rows import McpTimelineEntry
from flowproof.trace.changes import call_changes
from flowproof.trace.kinds import Document, LaneKind, Malformed, expect, field
from flowproof.trace.model import Lane

if TYPE_CHECKING:  # the reports' views: loaded when a report or a flow's MCP count is drawn
    from flowproof.report.view import McpEventView, McpLaneView


class McpLaneKind(LaneKind):
    """An MCP server's JSON-RPC (mcp/lane.py): calls matched by content, each at most once;
    notifications and server requests re-emitted at their anchors, never matched."""

    kind = "mcp"

    def encode(self, entry: Entry) -> Document:
        if isinstance(entry, Call):
            written: Document = {"call": entry.request, "answer": entry.answer}
            return {**written, "mocked": True} if entry.mocked else written
        if isinstance(entry, Notice):
            return {"notification": entry.message, "after": entry.after}
        return {"server_request": entry.request, "answer": entry.answer, "after": entry.after}

    def decode(self, data: Any, where: str) -> Entry:
        entry = expect(data, dict, where)
        if "call" in entry:
            request = expect(entry["call"], dict, f"{where}.call")
            answer = expect(field(entry, "answer", where), dict, f"{where}.answer")
            mocked = expect(entry.get("mocked", False), bool, f"{where}.mocked")
            return Call(request, answer, mocked)
        after = expect(field(entry, "after", where), int, f"{where}.after")
        if "notification" in entry:
            return Notice(expect(entry["notification"], dict, f"{where}.notification"), after)
        if "server_request" in entry:
            request = expect(entry["server_request"], dict, f"{where}.server_request")
            answer = expect(field(entry, "answer", where), dict, f"{where}.answer")
            return ServerRequest(request, answer, after)
        raise Malformed(f"{where} is none of call, notification, server_request")

    def bodies(self, lane: Lane) -> list[Body]:
        found = []
        for number, entry in enumerate(lane.entries, 1):
            if isinstance(entry, Notice):
                found.append(Body(f"{lane.name} entry {number} notification", entry.message))
                continue
            found.append(Body(f"{lane.name} entry {number} request", entry.request))
            found.append(Body(f"{lane.name} entry {number} answer", entry.answer))
        return found

    def timeline(self, lane: Lane) -> list[McpTimelineEntry]:
        """One row per entry: what a reader of the evidence needs without the trace (server,
        method, tool and arguments, the answer or error, mocked or not, a notice's anchor)."""
        server = lane.name.removeprefix(LANE_PREFIX)
        rows, calls = [], 0
        for number, entry in enumerate(lane.entries, 1):
            message = entry.message if isinstance(entry, Notice) else entry.request
            params: Any = message.get("params")
            tool = tool_name(message)
            answer = {} if isinstance(entry, Notice) else entry.answer
            if isinstance(entry, Call):
                calls += 1
            rows.append(
                McpTimelineEntry(
                    lane=lane.name,
                    server=server,
                    entry=number,
                    kind=_ROW_KINDS[type(entry)],
                    call=calls if isinstance(entry, Call) else None,
                    method=str(message.get("method", "?")),
                    tool=tool,
                    arguments=params.get("arguments") if tool is not None else params,
                    result=answer.get("result"),
                    error=answer.get("error"),
                    mocked=isinstance(entry, Call) and entry.mocked,
                    after=None if isinstance(entry, Call) else entry.after,
                )
            )
        return rows

    def migrate_rows(self, rows: list[Document], to_format: int) -> list[Document]:
        """Format 3 gave an MCP lane's entries their own rows (server, method, tool, arguments,
        result or error, mocked, anchor). A format-2 row of an MCP lane was a model-turn row:
        its message as the one tool call's `arguments`, the answer as JSON text; whether it was
        mocked, and a notification's anchor, were not kept."""
        if to_format != 3:
            return rows
        migrated, calls = [], 0
        for row in rows:
            kind = _FORMAT_2_KINDS.get(str(row.get("dialect")), "server_request")
            if kind == "call":
                calls += 1
            migrated.append(_format_3_row(row, kind, calls if kind == "call" else None))
        return migrated

    def lane_view(self, lane: str, rows: Sequence[McpTimelineEntry], diverged: bool) -> McpLaneView:
        """The lane's counts in a phrase (`mcp.files: 4 calls (1 mocked by flowproof), 1
        notification`) and one event per row."""
        from flowproof.report.view import McpLaneView

        calls = sum(row.kind == "call" for row in rows)
        mocked = sum(row.mocked for row in rows)
        notifications = sum(row.kind == "notification" for row in rows)
        requests = sum(row.kind == "server_request" for row in rows)
        phrase = f"{lane}: {plural(calls, 'call')}"
        if mocked:
            phrase += f" ({mocked} mocked by flowproof)"
        if notifications:
            phrase += f", {plural(notifications, 'notification')}"
        if requests:
            phrase += f", {plural(requests, 'server request')}"
        return McpLaneView(
            lane=lane,
            server=lane.removeprefix(LANE_PREFIX),
            events=[_event_view(row) for row in rows],
            calls=calls,
            mocked=mocked,
            notifications=notifications,
            phrase=phrase,
            diverged=diverged,
        )

    def changes(self, old: Sequence[Any], new: Sequence[Any]) -> list[str]:
        """The calls the agent made (method, tool) and their params by path; notifications
        are anchored echoes of the server and left out."""
        return list(call_changes(_described_calls(old), _described_calls(new)))

    def executed(self, lane: Lane) -> list[ExecutedCall]:
        server = lane.name.removeprefix(LANE_PREFIX)
        calls = []
        for number, entry in enumerate((e for e in lane.entries if isinstance(e, Call)), 1):
            if entry.tool is None:
                continue
            arguments = (entry.request.get("params") or {}).get("arguments", {})
            calls.append(ExecutedCall(server, entry.tool, arguments, number, entry.mocked))
        return calls

    def boundary_calls(self, lane: Lane) -> int:
        return sum(1 for entry in lane.entries if isinstance(entry, Call))

    def tool_lane(self, server: str) -> str:
        """`<server>/<tool>` steps name an MCP server's tools: its lane is `mcp.<server>`."""
        return lane_name(server)


_ROW_KINDS: dict[type, Literal["call", "notification", "server_request"]] = {
    Call: "call",
    Notice: "notification",
    ServerRequest: "server_request",
}


_FORMAT_2_KINDS = {"mcp call": "call", "mcp notification": "notification"}
"""A format-2 row's `dialect`, which told an MCP lane's entries apart."""


def _format_3_row(row: Document, kind: str, call: int | None) -> Document:
    lane = str(row.get("lane"))
    shown = row.get("tool_calls") or [{}]
    message = shown[0].get("arguments")
    message = message if isinstance(message, dict) else {}
    params: Any = message.get("params")
    answer = _parsed(row.get("text"))
    is_tool = message.get("method") == "tools/call" and isinstance(params, dict)
    tool = params.get("name") if is_tool else None
    return {
        "lane": lane,
        "server": lane.removeprefix(LANE_PREFIX),
        "entry": row.get("turn"),
        "kind": kind,
        "call": call,
        "method": str(message.get("method", "?")),
        "tool": tool if isinstance(tool, str) else None,
        "arguments": params.get("arguments") if is_tool else params,
        "result": answer.get("result"),
        "error": answer.get("error"),
    }


def _parsed(text: Any) -> Document:
    try:
        value = read_json(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {}


def _event_view(row: McpTimelineEntry) -> McpEventView:
    from flowproof.report.view import McpEventView, block

    failed = row.error is not None or (
        isinstance(row.result, dict) and row.result.get("isError") is True
    )
    answer = row.error if row.error is not None else row.result
    return McpEventView(
        entry=row.entry,
        kind=row.kind,
        call=row.call,
        method=row.method,
        tool=row.tool,
        arguments=None if row.arguments is None else block(row.arguments),
        answer=None if row.kind == "notification" or answer is None else block(answer),
        failed=failed,
        mocked=row.mocked,
        after=row.after,
    )


def _described_calls(entries: Sequence[Any]) -> tuple[ToolCall, ...]:
    calls = [entry for entry in entries if isinstance(entry, Call)]
    return tuple(
        ToolCall(describe(c.request), c.request.get("params", {}), "", number)
        for number, c in enumerate(calls)
    )

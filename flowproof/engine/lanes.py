"""Lanes: each boundary's traffic, and everything flowproof does with it, behind one interface.

A trace and a flow's Traffic hold named lanes of entries (trace/model.py). What an entry means
belongs to its lane's kind: how replay matches a request against the recorded entries, which
bodies the secret scan reads, how the run record's timeline shows it, what `record --diff`
says changed, and what it adds to the trajectory the assertions judge. The model boundary is
the `model` kind; the MCP tool boundary adds a kind here, and nothing else in the pipeline
changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar, Literal

from flowproof._registry import refuse_clash
from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import ToolCall, Trajectory
from flowproof.dialects import dialect_named
from flowproof.engine.tracediff import diff_mcp_lanes, diff_traces
from flowproof.engine.trajectory import build_trajectory
from flowproof.errors import TraceError
from flowproof.lanes import MODEL_LANE
from flowproof.matching.fields import FieldPath
from flowproof.matching.match import TurnMatcher
from flowproof.mcp.lane import LANE_PREFIX, Call, Notice, ServerRequest, tool_name
from flowproof.runrecord.model import (
    McpTimelineEntry,
    TimelineEntry,
    TimelineRow,
    ToolCallRecord,
    ToolResultRecord,
)
from flowproof.trace.model import Lane, Trace, Turn


class LaneKind:
    """What flowproof does with one kind of lane. Subclasses register by `kind`."""

    kind: ClassVar[str]
    _registry: ClassVar[dict[str, LaneKind]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        existing = LaneKind._registry.get(cls.kind)
        refuse_clash("lane kind", cls.kind, type(existing) if existing else None, cls)
        LaneKind._registry[cls.kind] = cls()

    def check(self, lane: Lane, source: str) -> None:
        """Refuse a loaded lane this flowproof cannot serve (raises TraceError)."""

    def bodies(self, lane: Lane) -> list[Body]:
        """Every body the secret scan reads, labelled for its messages."""
        raise NotImplementedError

    def timeline(self, lane: Lane) -> Sequence[TimelineRow]:
        """The run record's rows for the lane's entries, in the lane's order."""
        raise NotImplementedError

    def changes(self, old: Sequence[Any], new: Sequence[Any]) -> list[str]:
        """What a re-record changed, for the reviewer; empty when nothing did."""
        raise NotImplementedError

    def trajectory(self, lane: Lane) -> Trajectory | None:
        """The trajectory this lane establishes, if it is the one the assertions read."""
        return None

    def executed(self, lane: Lane) -> list[ToolCall]:
        """The tool calls this lane saw EXECUTED (the tool boundary), if it is one."""
        return []


class ModelLane(LaneKind):
    """Model turns: matched strictly by body, each at most once (matching/match.py)."""

    kind = MODEL_LANE

    def check(self, lane: Lane, source: str) -> None:
        for number, turn in enumerate(lane.entries, 1):
            if dialect_named(turn.dialect) is None:
                raise TraceError(f"{source}: turn {number} has unknown dialect {turn.dialect!r}")

    def matcher(self, turns: Sequence[Turn], ignored: Sequence[FieldPath] = ()) -> TurnMatcher:
        """Strict by body, `ignored` (the flow's `ignore_fields:`) left out of the comparison."""
        return TurnMatcher(turns, ignored)

    def bodies(self, lane: Lane) -> list[Body]:
        return [
            Body(f"turn {number} {part}", value)
            for number, turn in enumerate(lane.entries, 1)
            for part, value in (("request", turn.request), ("response", turn.response))
        ]

    def timeline(self, lane: Lane) -> list[TimelineEntry]:
        return [_turn_row(lane.name, number, turn) for number, turn in enumerate(lane.entries, 1)]

    def changes(self, old: Sequence[Any], new: Sequence[Any]) -> list[str]:
        return diff_traces(Trace.from_turns(old, ""), Trace.from_turns(new, ""))

    def trajectory(self, lane: Lane) -> Trajectory:
        return build_trajectory(lane.entries)


MODEL = ModelLane()
"""The model lane's kind, typed as such (replay asks it for its matcher); kinds are stateless."""


class McpLaneKind(LaneKind):
    """An MCP server's JSON-RPC (mcp/lane.py): calls matched by content, each at most once;
    notifications and server requests re-emitted at their anchors, never matched."""

    kind = "mcp"

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
                    kind=_MCP_ROWS[type(entry)],
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

    def changes(self, old: Sequence[Any], new: Sequence[Any]) -> list[str]:
        return diff_mcp_lanes(old, new)

    def executed(self, lane: Lane) -> list[ToolCall]:
        server = lane.name.removeprefix(LANE_PREFIX)
        calls = []
        for number, entry in enumerate(e for e in lane.entries if isinstance(e, Call)):
            if entry.tool is None:
                continue
            arguments = (entry.request.get("params") or {}).get("arguments", {})
            raw = json.dumps(arguments, ensure_ascii=False)
            calls.append(ToolCall(f"{server}/{entry.tool}", arguments, raw, number))
        return calls


_MCP_ROWS: dict[type, Literal["call", "notification", "server_request"]] = {
    Call: "call",
    Notice: "notification",
    ServerRequest: "server_request",
}


def _turn_row(lane: str, number: int, turn: Turn) -> TimelineEntry:
    dialect = dialect_named(turn.dialect)
    if dialect is None:
        return TimelineEntry(lane=lane, turn=number, dialect=turn.dialect, known=False)
    return TimelineEntry(
        lane=lane,
        turn=number,
        dialect=turn.dialect,
        known=True,
        tool_results=[
            ToolResultRecord(tool=name, content=content)
            for name, content in dialect.latest_tool_results(turn.request)
        ],
        tool_calls=[
            ToolCallRecord(name=name, arguments=raw)
            for name, raw in dialect.tool_calls(turn.response)
        ],
        text=dialect.reply_text(turn.response),
    )


def lane_kind(lane: Lane) -> LaneKind:
    try:
        return LaneKind._registry[lane.kind]
    except KeyError:
        raise TraceError(f"no lane kind {lane.kind!r} in this flowproof") from None


def check_lanes(trace: Trace, source: str) -> None:
    for lane in trace.lanes:
        lane_kind(lane).check(lane, source)


def all_bodies(lanes: Sequence[Lane]) -> list[Body]:
    return [body for lane in lanes for body in lane_kind(lane).bodies(lane)]


def timeline(lanes: Sequence[Lane]) -> list[TimelineRow]:
    return [row for lane in lanes for row in lane_kind(lane).timeline(lane)]


def trajectory(lanes: Sequence[Lane]) -> Trajectory:
    """The trajectory the assertions judge: the model lane's, with the calls every tool
    boundary lane saw executed beside it."""
    found = next(
        (t for lane in lanes if (t := lane_kind(lane).trajectory(lane)) is not None),
        build_trajectory(()),
    )
    executed = tuple(call for lane in lanes for call in lane_kind(lane).executed(lane))
    return replace(found, executed=executed)


def trace_changes(old: Trace, new: Trace) -> list[str]:
    """`record --diff` and `flowproof diff`: every lane's changes, the model lane's unprefixed."""
    names = [lane.name for lane in old.lanes]
    names += [lane.name for lane in new.lanes if lane.name not in names]
    lines = []
    for name in names:
        kind = lane_kind(Lane(name, ()))
        for line in kind.changes(old.lane(name), new.lane(name)):
            lines.append(line if name == MODEL_LANE else f"{name}: {line}")
    return lines

"""The model lane's kind, and the engine's questions asked of every lane through its kind.

A trace and a flow's Traffic hold named lanes of entries (trace/model.py). What an entry means
belongs to its lane's kind (trace/kinds.py, the one registry): how it is written to a trace,
how replay matches a request against the recorded entries, which bodies the secret scan reads,
how the run record's timeline shows it, what `record --diff` says changed, and what it adds to
the trajectory the assertions judge. The model boundary is the `model` kind, defined here; the
MCP tool boundary's kind lives beside its entries (mcp/kind.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import Trajectory
from flowproof.dialects import dialect_named
from flowproof.engine.tracediff import diff_traces
from flowproof.engine.trajectory import build_trajectory
from flowproof.errors import TraceError
from flowproof.lanes import MODEL_LANE
from flowproof.matching.fields import FieldPath
from flowproof.matching.match import TurnMatcher
from flowproof.runrecord.model import (
    TimelineEntry,
    TimelineRow,
    ToolCallRecord,
    ToolResultRecord,
)
from flowproof.trace.kinds import Document, LaneKind, expect, field, kind_named
from flowproof.trace.model import Lane, Trace, Turn


class ModelLane(LaneKind):
    """Model turns: matched strictly by body, each at most once (matching/match.py)."""

    kind = MODEL_LANE

    def encode(self, entry: Turn) -> Document:
        return {"dialect": entry.dialect, "request": entry.request, "response": entry.response}

    def decode(self, data: Any, where: str) -> Turn:
        turn = expect(data, dict, where)
        dialect = expect(field(turn, "dialect", where), str, f"{where}.dialect")
        return Turn(dialect, field(turn, "request", where), field(turn, "response", where))

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


def _turn_row(lane: str, number: int, turn: Turn) -> TimelineEntry:
    facts = turn.facts
    if facts is None:
        return TimelineEntry(lane=lane, turn=number, dialect=turn.dialect, known=False)
    return TimelineEntry(
        lane=lane,
        turn=number,
        dialect=turn.dialect,
        known=True,
        tool_results=[
            ToolResultRecord(tool=name, content=content) for name, content in facts.tool_results
        ],
        tool_calls=[ToolCallRecord(name=name, arguments=raw) for name, raw in facts.tool_calls],
        text=facts.reply,
    )


def lane_kind(lane: Lane) -> LaneKind:
    kind = kind_named(lane.kind)
    if kind is None:
        raise TraceError(f"no lane kind {lane.kind!r} in this flowproof")
    return kind


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

"""The engine's questions asked of every lane through its kind.

A trace and a flow's Traffic hold named lanes of entries (trace/model.py). What an entry means
belongs to its lane's kind (trace/kinds.py, the one registry): how it is written to a trace,
which bodies the secret scan reads, how the run record's timeline shows it, what
`record --diff` says changed, and what it adds to the trajectory the assertions judge. The
model boundary's kind lives beside its turns (proxy/kind.py), the MCP tool boundary's
beside its entries (mcp/kind.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import Trajectory
from flowproof.core.errors import TraceError
from flowproof.core.lanes import MODEL_LANE
from flowproof.engine.judge import Scope

# Imported so that whoever holds the engine's lane helpers holds the model lane's kind too.
from flowproof.proxy import kind as model_kind  # noqa: F401
from flowproof.runrecord.model import TimelineRow
from flowproof.trace.kinds import LaneKind, kind_named
from flowproof.trace.model import Lane, Trace
from flowproof.trace.trajectory import build_trajectory


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


def turn_scopes(lanes: Sequence[Lane]) -> dict[int, Scope]:
    """Each conversation turn's trajectory and bodies, read from the model turns tagged with
    it (numbered as in the whole flow). A tool boundary's executed calls are not tagged with a
    turn: a `<server>/<tool>` step judges the whole flow (the spec loader says so)."""
    model = next((lane.entries for lane in lanes if lane.name == MODEL_LANE), ())
    positions: dict[int, list[int]] = {}
    for index, turn in enumerate(model):
        if turn.conversation_turn is not None:
            positions.setdefault(turn.conversation_turn, []).append(index)
    scopes = {}
    for number, where in positions.items():
        found = build_trajectory([model[index] for index in where], where)
        bodies = tuple(
            Body(f"turn {index + 1} {part}", value)
            for index in where
            for part, value in (
                ("request", model[index].request),
                ("response", model[index].response),
            )
        )
        scopes[number] = Scope(found, bodies)
    return scopes


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

"""The model lane's kind: everything flowproof does with the `model` lane's turns, in one plugin,
kept with the model boundary as mcp/kind.py is kept with the tool boundary.

A turn is written to a trace as `{"dialect", "request", "response"}`, with the digest of the
bytes the agent sent (`request_sha256`, matching/exact.py) when record took one, and the
conversation's user turn it belongs to (`conversation_turn`) in a multi-turn flow; a loaded lane
is refused when a turn names a dialect this flowproof does not know; the secret scan reads
both bodies; the run record shows one timeline row per turn from its parsed facts
(trace/model.py); and `record --diff` and the trajectory read the main conversation
(trace/trajectory.py, matching/tracediff.py). Registered by defining it (trace/kinds.py lists
this module among its built-in kinds). Which turn replay serves is the matching's business
(matching/match.py), chosen by the engine's strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import Trajectory
from flowproof.core.errors import TraceError
from flowproof.core.lanes import MODEL_LANE
from flowproof.dialects import dialect_named
from flowproof.matching.exact import DIGEST_FIELD, is_digest
from flowproof.matching.tracediff import diff_traces
from flowproof.runrecord.model import TimelineEntry, ToolCallRecord, ToolResultRecord
from flowproof.trace.kinds import Document, LaneKind, Malformed, expect, field
from flowproof.trace.model import Lane, Trace, Turn
from flowproof.trace.trajectory import build_trajectory

CONVERSATION_FIELD = "conversation_turn"
"""The user turn a model turn belongs to, in a trace of a `conversation:` flow."""


class ModelLane(LaneKind):
    """Model turns, each spoken in a dialect (replay matches them strictly by body, each at most
    once: matching/match.py)."""

    kind = MODEL_LANE

    def encode(self, entry: Turn) -> Document:
        document = {"dialect": entry.dialect, "request": entry.request, "response": entry.response}
        if entry.request_sha256 is not None:
            document[DIGEST_FIELD] = entry.request_sha256
        if entry.conversation_turn is not None:
            document[CONVERSATION_FIELD] = entry.conversation_turn
        return document

    def decode(self, data: Any, where: str) -> Turn:
        turn = expect(data, dict, where)
        dialect = expect(field(turn, "dialect", where), str, f"{where}.dialect")
        digest = turn.get(DIGEST_FIELD)
        if digest is not None:
            digest = expect(digest, str, f"{where}.{DIGEST_FIELD}")
            if not is_digest(digest):
                raise Malformed(f"{where}.{DIGEST_FIELD} is not a SHA-256 digest (64 hex digits)")
        request, response = field(turn, "request", where), field(turn, "response", where)
        return Turn(dialect, request, response, digest, _conversation_turn(turn, where))

    def check(self, lane: Lane, source: str) -> None:
        for number, turn in enumerate(lane.entries, 1):
            if dialect_named(turn.dialect) is None:
                raise TraceError(f"{source}: turn {number} has unknown dialect {turn.dialect!r}")

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


def _conversation_turn(turn: Document, where: str) -> int | None:
    number = turn.get(CONVERSATION_FIELD)
    if number is None:
        return None
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise Malformed(f"{where}.{CONVERSATION_FIELD} is not a turn number (1, 2, ...)")
    return number


def _turn_row(lane: str, number: int, turn: Turn) -> TimelineEntry:
    facts = turn.facts
    if facts is None:
        return TimelineEntry(
            lane=lane,
            turn=number,
            dialect=turn.dialect,
            known=False,
            conversation_turn=turn.conversation_turn,
        )
    return TimelineEntry(
        lane=lane,
        turn=number,
        dialect=turn.dialect,
        known=True,
        conversation_turn=turn.conversation_turn,
        tool_results=[
            ToolResultRecord(tool=name, content=content) for name, content in facts.tool_results
        ],
        tool_calls=[ToolCallRecord(name=name, arguments=raw) for name, raw in facts.tool_calls],
        text=facts.reply,
    )

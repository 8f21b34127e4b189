"""What a re-record changed against the trace it replaced: the lines `record --diff` prints
and the run record keeps, so the pull-request comment of a record run shows a reviewer the
same thing the terminal showed (trajectory changes, and each turn whose request changed).

Pure: the previous trace and the lanes just recorded in, lines out."""

from __future__ import annotations

from dataclasses import dataclass

from flowproof._version import __version__
from flowproof.core.words import plural
from flowproof.engine.lanes import trace_changes
from flowproof.matching.divergence import field_differences
from flowproof.trace.model import Lane, Trace


@dataclass(frozen=True, slots=True)
class Rerecorded:
    turns: tuple[str, ...]
    """`record --keep-matching`: which turns were kept, and each one that reached the model
    again, with why (empty without --keep-matching)."""
    changes: tuple[str, ...]
    """Every lane's changes against the previous trace, the model lane's unprefixed."""

    def lines(self) -> list[str]:
        """Both, as the run record keeps them."""
        return [*self.turns, *self.changes]


def rerecorded(previous: Trace, lanes: tuple[Lane, ...], kept_turns: tuple[int, ...]) -> Rerecorded:
    new = Trace(lanes, __version__)
    turns: list[str] = []
    if kept_turns:
        numbers = ", ".join(str(turn + 1) for turn in kept_turns)
        which = "turns" if len(kept_turns) != 1 else "turn"
        turns = [f"kept from the previous trace, unchanged: {which} {numbers}"]
        turns += _rerecorded_turns(previous, new, kept_turns)
    return Rerecorded(tuple(turns), tuple(trace_changes(previous, new)))


def _rerecorded_turns(old: Trace, new: Trace, kept_turns: tuple[int, ...]) -> list[str]:
    """Each turn that reached the model again, and why: its request no longer matched the
    previous trace's (the first field that changed), or there was none."""
    lines = []
    for position in range(len(new.turns)):
        if position in kept_turns:
            continue
        if position >= len(old.turns):
            why = f"new: the previous trace had {plural(len(old.turns), 'turn')}"
        else:
            was, now = old.turns[position].request, new.turns[position].request
            first = field_differences(was, now).first
            why = f"the request changed at {first.path}" if first else "its request changed"
        lines.append(f"re-recorded: turn {position + 1} ({why})")
    return lines

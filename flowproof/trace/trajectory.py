"""Served (or recorded) turns → the Trajectory the assertions read.

The reply belongs to the conversation the flow is about. Agents also talk to the model about
other things (naming a session, a guardrail check), concurrently and in any order, so "the last
assistant message" would be a coin flip. Turns that continue one conversation share a system
prompt: group by it, take the thread with the most turns, and break ties by the thread carrying
the most request text (the working conversation carries the real prompt and tool schemas).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from flowproof.assertions.trajectory import ToolCall, Trajectory
from flowproof.core.readjson import UnreadableJson, read_json
from flowproof.trace.model import Turn, TurnFacts


def build_trajectory(turns: Sequence[Turn], positions: Sequence[int] = ()) -> Trajectory:
    """`positions`: each turn's 0-based place in the whole model lane, when `turns` is part of
    it (a conversation turn's); the calls and messages number the turns by it."""
    at = positions or range(len(turns))
    calls = []
    for number, turn in enumerate(turns):
        for name, raw in _facts(turn).tool_calls:
            calls.append(_tool_call(name, raw, at[number]))
    if not turns:
        return Trajectory(tuple(calls), None, "no model turns were served")
    offered = tuple(dict.fromkeys(name for turn in turns for name in _facts(turn).offered_tools))
    last = main_thread(turns)[-1]
    number = at[turns.index(last)] + 1
    reply = _facts(last).reply
    if reply is None:
        names = ", ".join(name for name, _ in _facts(last).tool_calls)
        return Trajectory(
            tuple(calls),
            None,
            f"its last turn (turn {number}) is a tool call ({names}), not a reply",
            offered=offered,
        )
    return Trajectory(tuple(calls), reply, offered=offered)


def main_thread(turns: Sequence[Turn]) -> list[Turn]:
    threads: dict[str, list[Turn]] = {}
    for turn in turns:
        threads.setdefault(_facts(turn).system_prompt, []).append(turn)

    def weight(thread: list[Turn]) -> tuple[int, int]:
        return len(thread), sum(len(json.dumps(t.request, ensure_ascii=False)) for t in thread)

    return max(threads.values(), key=weight)


def _facts(turn: Turn) -> TurnFacts:
    facts = turn.facts
    if facts is None:
        raise ValueError(f"unknown dialect {turn.dialect!r} in a turn")
    return facts


def _tool_call(name: str, raw: str, turn: int) -> ToolCall:
    """The call with its arguments parsed; arguments that are not JSON, or that the JSON reader
    refuses (too deeply nested for any walk over them, say), stay the raw string, judged as
    unreadable rather than crashing the judge."""
    try:
        return ToolCall(name, read_json(raw), raw, turn)
    except UnreadableJson as exc:
        return ToolCall(name, raw, raw, turn, unreadable="" if exc.syntax else str(exc))

"""Serving recorded turns: strict by body, each turn at most once, earliest match first.

Order between requests is deliberately NOT part of matching: agents issue some calls
concurrently (a guardrail beside the main call, a title beside the task), and a recording
cannot promise an order the agent does not. A sequential agent is unaffected: the earliest
unconsumed match means turn K still serves request K.

Fields a flow declares volatile (`ignore_fields:`, matching/fields.py) are stripped from both
sides before the comparison, and before closeness is judged; nothing else is.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from typing import Any

from flowproof.dialects.base import without_transport
from flowproof.matching.fields import FieldPath, strip_fields
from flowproof.trace.model import Turn


def compared(request: Any, ignored: Sequence[FieldPath] = ()) -> Any:
    """The part of a body matching compares: transport keys and ignored fields out."""
    return strip_fields(without_transport(request), ignored)


def request_key(request: Any, ignored: Sequence[FieldPath] = ()) -> str:
    """The exact-comparison form of a body: compact JSON, key order kept, transport keys and
    the declared `ignored` fields out."""
    return json.dumps(compared(request, ignored), separators=(",", ":"), ensure_ascii=False)


class TurnMatcher:
    """Consume-once lookup over a trace's turns.

    Turns are indexed by (dialect, canonical request) once, each key holding its turns in
    recorded order, so a claim costs one key computation and a dict lookup however long the
    trace is; the earliest-unconsumed rule is the front of the key's queue.
    """

    def __init__(self, turns: Sequence[Turn], ignored: Sequence[FieldPath] = ()) -> None:
        self.turns = tuple(turns)
        self.ignored = tuple(ignored)
        self._consumed = [False] * len(self.turns)
        self._by_key: dict[tuple[str, str], deque[int]] = {}
        for index, turn in enumerate(self.turns):
            key = (turn.dialect, request_key(turn.request, self.ignored))
            self._by_key.setdefault(key, deque()).append(index)

    def claim(self, dialect: str, request: Any) -> int | None:
        """Index of the earliest unconsumed turn that matches exactly, now consumed; else None."""
        waiting = self._by_key.get((dialect, request_key(request, self.ignored)))
        if not waiting:
            return None
        index = waiting.popleft()
        self._consumed[index] = True
        return index

    def closest(self, dialect: str, request: Any) -> int | None:
        """The unconsumed turn most like `request`, to explain a divergence against.

        Closeness is the length of the shared message history, then the same dialect, then
        earliest: a sequential agent diverging at request K is compared with turn K.
        """
        best: tuple[int, int, int] | None = None
        replayed = compared(request, self.ignored)
        for index, turn in enumerate(self.turns):
            if self._consumed[index]:
                continue
            recorded = compared(turn.request, self.ignored)
            score = (_shared_history(recorded, replayed), turn.dialect == dialect, -index)
            if best is None or score > best:
                best = score
        return None if best is None else -best[2]

    @property
    def served(self) -> int:
        return sum(self._consumed)

    def unserved(self) -> list[int]:
        return [index for index, used in enumerate(self._consumed) if not used]


def _shared_history(recorded: Any, replayed: Any) -> int:
    """How many leading conversation items two requests share (messages, or Responses input)."""
    if not (isinstance(recorded, dict) and isinstance(replayed, dict)):
        return 0
    for key in ("messages", "input"):
        a, b = recorded.get(key), replayed.get(key)
        if isinstance(a, list) and isinstance(b, list):
            shared = 0
            for x, y in zip(a, b, strict=False):
                if x != y:
                    break
                shared += 1
            return shared
    return 0

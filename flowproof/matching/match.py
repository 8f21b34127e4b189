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
from collections.abc import Callable, Sequence
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

    Turns are indexed by (dialect, canonical request), each key holding its turns in recorded
    order, so a claim costs one key computation and a dict lookup however long the trace is;
    the earliest-unconsumed rule is the front of the key's queue. The index is built lazily,
    from the first turn on, only as far as a claim needs (a sequential agent's request K
    indexes turn K): a trace is loaded without serialising every request, and a request
    served by its bytes (`claim_exact`) never needs its turn's key at all.

    With `exact` (the default) the turns are also indexed by the digest of the bytes record
    saw (matching/exact.py); `exact=False` builds the matcher that reads every request, the
    reference the fast path is tested against. Both kinds of claim share one set of consumed
    flags.
    """

    def __init__(
        self, turns: Sequence[Turn], ignored: Sequence[FieldPath] = (), *, exact: bool = True
    ) -> None:
        self.turns = tuple(turns)
        self.ignored = tuple(ignored)
        self._consumed = [False] * len(self.turns)
        self._by_key: dict[tuple[str, str], deque[int]] = {}
        self._keys: list[str | None] = [None] * len(self.turns)
        self._indexed = 0
        """Turns [0, _indexed) are in `_by_key`."""
        self._front = 0
        """No turn before this one is unconsumed."""
        self._by_digest: dict[str, deque[int]] = {}
        if exact:
            for index, turn in enumerate(self.turns):
                if turn.request_sha256 is not None:
                    self._by_digest.setdefault(turn.request_sha256, deque()).append(index)

    def claim(self, dialect: str, request: Any) -> int | None:
        """Index of the earliest unconsumed turn that matches exactly, now consumed; else None."""
        key = (dialect, request_key(request, self.ignored))
        while True:
            waiting = self._by_key.get(key)
            if waiting:
                _drop_consumed(waiting, self._consumed)
            if waiting:
                index = waiting.popleft()
                self._consume(index)
                return index
            # Only turns past the indexed prefix can hold it: the next one joins the index.
            if self._indexed == len(self.turns):
                return None
            self._index_next()

    def claim_exact(
        self, dialect: str, digest: str, admitted: Callable[[int], bool] = lambda index: True
    ) -> int | None:
        """The turn recorded from these very bytes, now consumed, when the slow path would
        claim that same turn for them; None otherwise (then ask `claim`). `admitted(index)`
        says whether normalising the request's parse, and the recorded request of turn
        `index` at record, changed nothing (exact.FastGate, exact.is_plain): asked only once a
        turn was found, as it reads the whole body."""
        waiting = self._by_digest.get(digest)
        if not waiting:
            return None
        _drop_consumed(waiting, self._consumed)
        if not waiting:
            return None
        index = waiting[0]
        if self.turns[index].dialect != dialect:
            return None
        if not admitted(index) or not self._is_earliest(index):
            return None
        waiting.popleft()
        self._consume(index)
        return index

    def _is_earliest(self, index: int) -> bool:
        """Whether the slow path would claim turn `index` for a request of its key: no earlier
        unconsumed turn has the same. A sequential agent has consumed every earlier turn."""
        while self._front < len(self.turns) and self._consumed[self._front]:
            self._front += 1
        if self._front == index:
            return True
        while self._indexed <= index:
            self._index_next()
        waiting = self._by_key[self._key_of(index)]
        _drop_consumed(waiting, self._consumed)
        return waiting[0] == index

    def _key_of(self, index: int) -> tuple[str, str]:
        turn = self.turns[index]
        key = self._keys[index]
        if key is None:
            key = self._keys[index] = request_key(turn.request, self.ignored)
        return (turn.dialect, key)

    def _index_next(self) -> None:
        index = self._indexed
        if not self._consumed[index]:  # a turn served by its bytes is never claimed again
            self._by_key.setdefault(self._key_of(index), deque()).append(index)
        self._indexed += 1

    def _consume(self, index: int) -> None:
        self._consumed[index] = True
        self._keys[index] = None  # the key of a served turn is never asked again

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


def _drop_consumed(waiting: deque[int], consumed: Sequence[bool]) -> None:
    """Turns another kind of claim consumed leave the front of their queues here, lazily."""
    while waiting and consumed[waiting[0]]:
        waiting.popleft()


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


class ConversationMatcher:
    """A `conversation:` trace's turns, each served only within the user turn it was recorded
    in: one TurnMatcher per user turn, asked for the user turn the agent is in now
    (`current`, read from the traffic as each request arrives). Both kinds of claim go through
    the same per-turn matcher, so the byte-exact path serves what the read path would.

    Indices in and out are the trace's (`turns` is every turn, as TurnMatcher's is)."""

    def __init__(
        self,
        turns: Sequence[Turn],
        current: Callable[[], int],
        ignored: Sequence[FieldPath] = (),
        *,
        exact: bool = True,
    ) -> None:
        self.turns = tuple(turns)
        self.ignored = tuple(ignored)
        self._current = current
        positions: dict[int, list[int]] = {}
        for index, turn in enumerate(self.turns):
            positions.setdefault(turn.conversation_turn or 0, []).append(index)
        self._parts = {
            user_turn: (TurnMatcher([self.turns[i] for i in where], ignored, exact=exact), where)
            for user_turn, where in positions.items()
        }

    @property
    def user_turn(self) -> int:
        """The user turn the agent is in."""
        return self._current()

    def recorded_in(self, user_turn: int) -> int:
        """How many requests the recording holds for `user_turn`."""
        part = self._parts.get(user_turn)
        return 0 if part is None else len(part[1])

    def claim(self, dialect: str, request: Any) -> int | None:
        return self._in_turn(lambda matcher: matcher.claim(dialect, request))

    def claim_exact(
        self, dialect: str, digest: str, admitted: Callable[[int], bool] = lambda index: True
    ) -> int | None:
        part = self._parts.get(self._current())
        if part is None:
            return None
        matcher, where = part  # (`admitted` is asked about a turn by its index in the trace)
        local = matcher.claim_exact(dialect, digest, lambda index: admitted(where[index]))
        return None if local is None else where[local]

    def closest(self, dialect: str, request: Any) -> int | None:
        return self._in_turn(lambda matcher: matcher.closest(dialect, request))

    def _in_turn(self, ask: Callable[[TurnMatcher], int | None]) -> int | None:
        part = self._parts.get(self._current())
        if part is None:
            return None
        matcher, where = part
        local = ask(matcher)
        return None if local is None else where[local]

    @property
    def served(self) -> int:
        return sum(matcher.served for matcher, _ in self._parts.values())

    def unserved(self) -> list[int]:
        return sorted(
            where[i] for matcher, where in self._parts.values() for i in matcher.unserved()
        )


def matcher_for(
    turns: Sequence[Turn],
    ignored: Sequence[FieldPath] = (),
    current: Callable[[], int] | None = None,
    *,
    exact: bool = True,
) -> TurnMatcher | ConversationMatcher:
    """The matching rule a recorded model lane follows: turn-scoped for a conversation's trace
    replayed by a conversation flow (`current` given), else TurnMatcher."""
    if current is not None and any(turn.conversation_turn is not None for turn in turns):
        return ConversationMatcher(turns, current, ignored, exact=exact)
    return TurnMatcher(turns, ignored, exact=exact)

"""Which user turn of a `conversation:` flow the agent is in, decided by what the proxy serves.

A conversation's first user turn is the agent's FLOWPROOF_PROMPT; each later one is handed to
it (a line on a command agent's stdin) once its exchange with the model for the turn before is
complete. "Complete" must mean the same at record and at replay, and be read from flowproof's
side of the boundary, never guessed from timing: a user turn is complete when the proxy serves
a model response that asks for no tool call (the model's reply to the user). From that moment
every model request belongs to the next user turn; the last user turn keeps every request
that follows it.

So an agent that, within one user turn, makes a model call whose answer is plain text before
its final reply (a title, a guardrail check) has its turn cut there; such an agent is tested
one turn per flow.

A `url:` service is given each turn as a POST of its own, and its answer to the POST is what
completes the turn: the driver begins each turn (`begin`) as it sends it, and a reply moves
nothing (`by_reply` False).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace

from flowproof.dialects import dialect_named
from flowproof.trace.model import Turn


@dataclass(slots=True)
class Conversation:
    """The user turns of one flow, and how far the agent has come through them."""

    texts: tuple[str, ...]
    """What the user says in each turn, the first being the agent's prompt."""
    by_reply: bool = True
    """Whether a reply completes a turn (a command agent); False when the driver says when
    each turn begins (a `url:` service: one POST per turn)."""
    current: int = 1
    """The user turn the agent is in (1-based)."""
    requests: list[int] = field(default_factory=list)
    """Model requests served (or recorded) per user turn, turn 1 first."""
    _reached: list[asyncio.Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.requests = [0] * len(self.texts)
        self._reached = [asyncio.Event() for _ in self.texts]
        self._reached[0].set()

    def tag(self, turn: Turn) -> Turn:
        """`turn` (just served) marked with the user turn it belongs to; a reply completes the
        user turn, and the next one begins."""
        tagged = replace(turn, conversation_turn=self.current)
        self.requests[self.current - 1] += 1
        if self.by_reply and self.current < len(self.texts) and _is_reply(turn):
            self.current += 1
            self._reached[self.current - 1].set()
        return tagged

    def begin(self, number: int) -> None:
        """User turn `number` is being handed to the agent now (a `url:` service's POST)."""
        self.current = number
        self._reached[number - 1].set()

    async def later_turns(self) -> AsyncIterator[str]:
        """The text of each user turn after the first, each as soon as it begins."""
        for number in range(2, len(self.texts) + 1):
            await self._reached[number - 1].wait()
            yield self.texts[number - 1]

    def unanswered(self) -> str | None:
        """Why the agent did not go through every user turn, naming the turn; None when each
        turn was handed to it and it made a model request for each."""
        if self.current < len(self.texts):
            if not self.by_reply:
                return f"conversation turn {self.current + 1} was never sent to the service"
            return (
                f"the agent ended before conversation turn {self.current + 1} was handed to it: "
                f"turn {self.current} never got a reply (a model response with no tool call)"
            )
        handed = "its POST" if not self.by_reply else "the turn was written on its stdin"
        for number, count in enumerate(self.requests, 1):
            if count == 0:
                return (
                    f"the agent ended without answering conversation turn {number}: it made "
                    f"no model request after {handed}"
                )
        return None


def turn_counts(turns: Sequence[Turn]) -> dict[int, int]:
    """How many model turns each user turn of a recorded conversation holds."""
    counts: dict[int, int] = {}
    for turn in turns:
        if turn.conversation_turn is not None:
            counts[turn.conversation_turn] = counts.get(turn.conversation_turn, 0) + 1
    return counts


def _is_reply(turn: Turn) -> bool:
    dialect = dialect_named(turn.dialect)
    if dialect is None:
        return False
    return not dialect.tool_calls(turn.response)

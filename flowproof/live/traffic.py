"""flowproof's own record of what crossed the boundaries during one flow.

The verdict is read from here, never from the agent's exit code: an agent that swallows a
divergence and exits 0 still fails, because the divergence is written down on this side.
Every boundary writes into its own lane (`model` here; `mcp.<name>` from the MCP stand-ins),
so the trace, the trajectory, the secret scan and the reports read one structure.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flowproof.core.lanes import MODEL_LANE
from flowproof.matching.divergence import Divergence
from flowproof.trace.model import Lane, Turn

if TYPE_CHECKING:
    from flowproof.live.conversation import Conversation

MAX_PATH_SHOWN = 200
"""An outsider's path is kept only this long: it is whatever a stranger sent."""
NO_RETRY = {"x-should-retry": "false"}
"""Stainless SDKs (openai, anthropic; Python and npm) honour this and do not retry."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What the proxy sends back for one request."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    turn: Turn | None = None
    """The turn this answer served, as the trace keeps it; the proxy's app writes it into the
    traffic (backends only say what it is). None for a refusal, which writes no turn."""


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the proxy could not serve: a change in what the agent sends, so a failure."""

    number: int
    """Its place among every request that arrived at the proxy, from 1."""
    method: str
    path: str
    status: int
    """The 4xx the proxy answered."""
    why: str

    def render(self) -> str:
        return (
            f"request {self.number} could not be served ({self.status}): "
            f"{self.method} {self.path}: {self.why}"
        )


@dataclass(slots=True)
class Traffic:
    """Mutable log of one flow's traffic, shared by the boundaries and the engine."""

    lanes: dict[str, list[Any]] = field(default_factory=lambda: {MODEL_LANE: []})
    """Entries served (replay) or recorded (record) per lane, in arrival order."""
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    """(method, path, dialect name or '?') of every request that arrived at the model proxy."""
    refused: list[Refused] = field(default_factory=list)
    """Requests the proxy answered 4xx without asking the backend (each is in `failures` too)."""
    outsiders: list[tuple[str, str]] = field(default_factory=list)
    """(method, path) of each request refused for not carrying the flow's capability
    (flowproof/guards/capability.py): sent by another process on the machine, or by a client that
    dropped the path of its base URL. No backend saw it and no lane holds it; the run record
    keeps only how many there were, and doctor lists them."""
    divergence: Divergence | None = None
    failures: list[str] = field(default_factory=list)
    """Reasons the flow failed at a boundary other than a divergence (upstream errors, ...)."""
    notes: list[str] = field(default_factory=list)
    """What crossed a boundary that the flow's record should mention without failing it: the
    attempts an upstream told to try again later before it answered."""
    kept: set[int] = field(default_factory=set)
    """`record --keep-matching`: model turns (0-based) served from the previous trace."""
    fatal: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the flow has failed at a boundary, so the driver can stop the agent early."""
    conversation: Conversation | None = None
    """A `conversation:` flow's user turns: each model turn is tagged with its user turn as it
    is served, and a reply moves the conversation on (flowproof/live/conversation.py)."""

    def add(self, lane: str, entry: Any) -> None:
        """One entry served or recorded on `lane`."""
        if self.conversation is not None and lane == MODEL_LANE:
            entry = self.conversation.tag(entry)
        self.lanes.setdefault(lane, []).append(entry)

    @property
    def turns(self) -> list[Turn]:
        """The model lane."""
        return self.lanes[MODEL_LANE]

    def snapshot(self) -> tuple[Lane, ...]:
        """Every lane as it stands, the model lane first (what a trace records)."""
        return tuple(Lane(name, tuple(entries)) for name, entries in self.lanes.items())

    def fail(self, reason: str) -> None:
        self.failures.append(reason)
        self.fatal.set()

    def refuse(self, refused: Refused) -> None:
        """An unservable request fails the flow like a divergence: the backends refuse every
        later request, and the driver stops the agent (after its grace to exit on its own).
        `flowproof doctor` runs its agent to the end regardless: it reports what arrives."""
        self.refused.append(refused)
        self.fail(refused.render())

    def refuse_outsider(self, method: str, path: str) -> None:
        """Not a failure of the flow: the agent did not send it."""
        self.outsiders.append((method, path[:MAX_PATH_SHOWN]))

    def diverge(self, divergence: Divergence) -> None:
        if self.divergence is None:
            self.divergence = divergence
        self.fatal.set()

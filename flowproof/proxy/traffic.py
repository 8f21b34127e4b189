"""flowproof's own record of what crossed the model boundary during one flow.

The verdict is read from here, never from the agent's exit code: an agent that swallows a
divergence and exits 0 still fails, because the divergence is written down on this side.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from flowproof.matching.divergence import Divergence
from flowproof.trace.model import Turn

NO_RETRY = {"x-should-retry": "false"}
"""Stainless SDKs (openai, anthropic; Python and npm) honour this and do not retry."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What the proxy sends back for one request."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Traffic:
    """Mutable log of one flow's model traffic, shared by the proxy and the engine."""

    turns: list[Turn] = field(default_factory=list)
    """Turns served (replay) or recorded (record), in arrival order."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """(path, dialect name or '?') of every request that arrived, routed or not."""
    divergence: Divergence | None = None
    failures: list[str] = field(default_factory=list)
    """Reasons the flow failed at the boundary other than a divergence (upstream errors, ...)."""
    fatal: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the flow has failed at the boundary, so the driver can stop the agent early."""

    def fail(self, reason: str) -> None:
        self.failures.append(reason)
        self.fatal.set()

    def diverge(self, divergence: Divergence) -> None:
        if self.divergence is None:
            self.divergence = divergence
        self.fatal.set()

"""What a trace holds. Bodies only: no headers, no keys, ever."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Turn:
    """One model call: what the agent sent (after tool-result substitution) and what came back."""

    dialect: str
    """The wire API the turn was spoken in, e.g. `openai_chat`."""
    request: Any
    """The request body as parsed JSON, key order kept (text when it was not JSON)."""
    response: Any
    """The response body as parsed JSON, key order kept."""


@dataclass(frozen=True, slots=True)
class Trace:
    """A recorded flow: its turns in the order they arrived at record."""

    turns: tuple[Turn, ...]
    flowproof_version: str
    """The flowproof that wrote the trace (informational; the format version decides reading)."""

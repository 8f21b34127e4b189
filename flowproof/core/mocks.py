"""Mocked tools, at both boundaries: what a tool the spec answers itself returns on each call.

A spec mocks a tool the same way wherever it is called: `result:` answers every call alike,
`results:` answers calls in order and runs out. The model boundary (a `tools:` entry, its
result substituted into the conversation) and the tool boundary (an `mcp:` server's tool,
answered instead of the real server) share one `ToolMock`, built from the spec by
spec/mocks.py, and one sentence for a list that ran out; only the name each boundary gives its
list differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flowproof.core.errors import ToolResultsExhausted


@dataclass(frozen=True, slots=True)
class MockedBoundary:
    """How a boundary names a mock's list when it runs out (its users already read that name)."""

    pause: str
    """What follows "called N times" before "but" (a comma, or nothing)."""
    list_name: str
    count: Callable[[int], str]
    """How many entries the list has, as the sentence says it."""


def _only_entries(available: int) -> str:
    return f"only {available} entr{'y' if available == 1 else 'ies'}"


MODEL_TOOLS = MockedBoundary(",", "results: list", _only_entries)
"""A `tools:` entry of the spec, substituted into what the model is told."""
MCP_TOOLS = MockedBoundary("", "mcp `results:` list", str)
"""A tool of an `mcp:` server, answered instead of the real server."""


def ran_out(
    tool: str, call_number: int, available: int, boundary: MockedBoundary, where: str = ""
) -> str:
    """The one sentence for a `results:` list that ran out, in the boundary's words."""
    text = (
        f"tool {tool} was called {call_number} times{boundary.pause} but its "
        f"{boundary.list_name} has {boundary.count(available)}"
    )
    if where:
        text += f" ({where}); add an entry, or give `result:` to answer every call alike"
    return text


@dataclass(frozen=True, slots=True)
class ToolMock:
    """What a mocked tool returns: one fixed result, or a sequence in call order."""

    results: tuple[Any, ...]
    repeat: bool
    """True for a single `result:`, served to every call; False for `results:`."""
    where: str = ""
    """Where the spec writes the list (`specs/booking.yaml:9`), for the message when it runs out."""

    def result_for(self, tool: str, occurrence: int, boundary: MockedBoundary = MODEL_TOOLS) -> Any:
        """The result of the `occurrence`-th (0-based) call of `tool`. Raises
        ToolResultsExhausted, worded for `boundary`, past a `results:` list."""
        if self.repeat:
            return self.results[0]
        if occurrence < len(self.results):
            return self.results[occurrence]
        call_number, available = occurrence + 1, len(self.results)
        message = ran_out(tool, call_number, available, boundary, self.where)
        raise ToolResultsExhausted(tool, call_number, available, message)

    def content_for(self, tool: str, occurrence: int) -> str:
        """The tool-message text for the `occurrence`-th (0-based) call of `tool`."""
        value = self.result_for(tool, occurrence)
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


ToolMocks = Mapping[str, ToolMock]

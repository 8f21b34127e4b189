"""What a flow did, as the assertions see it: the value the engine hands to `evaluate`.

The engine builds a `Trajectory` from the served (or recorded) turns; the assertion layer only
reads it. Kept here, beside its only reader, so the pure assertion package imports nothing
from the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the MODEL asked for (whether the agent then ran it is not visible here)."""

    name: str
    """The tool's name as the model wrote it."""
    arguments: Any
    """The parsed JSON arguments, or the raw string when they are not valid JSON."""
    raw_arguments: str
    """The arguments exactly as they crossed the wire."""
    turn: int
    """Index of the turn (in arrival order) whose response carried this call."""
    unreadable: str = ""
    """Why JSON arguments were refused (too deeply nested, NaN, a key twice), with the path;
    empty when they were read, or are simply not JSON."""


@dataclass(frozen=True, slots=True)
class ExecutedCall:
    """One tool call the agent EXECUTED at a tool boundary (an MCP `tools/call`)."""

    server: str
    """The server's name in the spec's `mcp:` block."""
    tool: str
    arguments: Any
    """The call's `arguments` as the agent sent them (JSON, so never a raw string)."""
    call: int
    """Its 1-based place among the calls of its server's lane."""
    mocked: bool
    """Whether flowproof answered it from a spec mock instead of the recorded server."""
    unreadable: ClassVar[str] = ""
    """Always empty: the stand-in read these arguments as part of a JSON-RPC message."""

    @property
    def name(self) -> str:
        """`<server>/<tool>`: what a `<server>/<tool>` step names."""
        return f"{self.server}/{self.tool}"

    @property
    def raw_arguments(self) -> str:
        """The arguments as JSON text, for messages that quote them."""
        return json.dumps(self.arguments, ensure_ascii=False)


JudgedCall = ToolCall | ExecutedCall
"""A call a `assert_tool_call` step judges: asked for by the model, or executed at a tool."""


@dataclass(frozen=True, slots=True)
class Trajectory:
    """The ordered tool calls of a flow, and the reply of the conversation the flow is about."""

    tool_calls: tuple[ToolCall, ...]
    """Every tool call the model asked for, in the order the turns arrived."""
    reply: str | None
    """Text of the final assistant message of the main thread; None when that thread ended on a
    tool call or there were no turns (absent, which is not the same as empty text)."""
    reply_absent_reason: str = ""
    """Why `reply` is None, in words a failure message can quote."""
    executed: tuple[ExecutedCall, ...] = ()
    """The tool boundary: every MCP `tools/call` the agent made, in the order each was
    answered."""
    offered: tuple[str, ...] | None = None
    """Every tool name the agent offered the model in any request, first offer first; None
    when no model turn was served, so nothing is known of what it offers."""

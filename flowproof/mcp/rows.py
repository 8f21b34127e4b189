"""The MCP lane's rows in the run record: one per entry of an `mcp.<server>` lane.

Registered with the MCP kind (trace/kinds.py, `BUILT_IN_KINDS`), so the run record's timeline
union gathers it when it is defined; the kind's behaviour (mcp/kind.py) writes these rows.
"""

from __future__ import annotations

from typing import Any, Literal

from flowproof.runrecord.base import LaneRow


class McpTimelineEntry(LaneRow):
    """One entry of an MCP server's lane (`mcp.<server>`): a call the agent made and its
    answer, a notification the server sent, or a request the server sent the agent. The lane
    has no clock shared with the model turns: its rows are in the lane's own order."""

    lane: str
    """`mcp.<server>`."""
    server: str
    """The server's name in the spec's `mcp:` block."""
    entry: int
    """1-based position among the lane's entries."""
    kind: Literal["call", "notification", "server_request"]
    """A call from the agent, a notification from the server, or a request from the server
    (sampling, elicitation, roots) with the agent's answer."""
    call: int | None = None
    """For a call: its 1-based number among the lane's calls (what a divergence's "call N"
    and "recorded call K" count, and what `executed` links to); None otherwise."""
    method: str
    """The JSON-RPC method (`tools/call`, `initialize`, `notifications/progress`, ...)."""
    tool: str | None = None
    """For `tools/call`: the tool's name."""
    arguments: Any = None
    """For `tools/call`: the tool's arguments; otherwise the message's `params`. None when it
    has none."""
    result: Any = None
    """The answer's `result` (a call's, or the agent's to a server request); None when the
    answer is an error or the entry is a notification."""
    error: Any = None
    """The answer's JSON-RPC `error` object; None when it succeeded."""
    mocked: bool = False
    """Answered by flowproof from the spec's `result:`/`results:`; the real server never saw
    the call, in either phase."""
    after: int | None = None
    """For a notification or server request: the calls answered on the lane when it crossed
    (where replay re-emits it); None for a call."""

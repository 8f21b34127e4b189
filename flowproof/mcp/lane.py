"""An MCP server's lane: what crossed it, how a replayed call is matched, and why one diverges.

Pure: no IO. A lane (`mcp.<server>`) holds three kinds of entry, in the order they happened:

- a Call: a request the agent sent and the answer it got (`{"result": ...}` or `{"error": ...}`);
- a Notice: a notification the server sent, anchored `after` the number of calls answered
  when it crossed;
- a ServerRequest: a request the SERVER sent (sampling, elicitation, roots), the agent's
  answer, and its anchor.

Messages are stored without their JSON-RPC `id` and `jsonrpc`: ids are the agent's own
numbering, re-mapped at replay, never matched. Matching follows the model boundary's settled
rule, not position: a call is served by the earliest unconsumed recorded call that matches, so
pipelined calls answered out of order replay deterministically. What "matches" means is the
method, then for `tools/call` the tool name, then everything else in the params exactly, less
the ignored knobs (KNOBS): values that change with every SDK patch release or every run.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flowproof.matching.divergence import Divergence, field_differences, find_difference

LANE_PREFIX = "mcp."
META = "_meta"
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
"""Where a modern (2026-07-28) request carries its protocol version; matched like the rest."""
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
IGNORED_META = ("progressToken", CLIENT_INFO, CLIENT_CAPABILITIES)
"""`_meta` keys no call is matched on: a progress token is the request id again, and the
modern protocol's client info and capabilities ride on every request."""
IGNORED_INITIALIZE = ("clientInfo", "capabilities")
"""`initialize` params no call is matched on; `protocolVersion` is matched."""


def lane_name(server: str) -> str:
    return f"{LANE_PREFIX}{server}"


@dataclass(frozen=True, slots=True)
class Call:
    """A request from the agent and the answer it was given."""

    request: dict[str, Any]
    """`{"method": ..., "params"?: ...}`: the message without `id` and `jsonrpc`."""
    answer: dict[str, Any]
    """`{"result": ...}` or `{"error": {...}}`."""
    mocked: bool = False
    """Answered by flowproof from the spec's `result:`; the real server never saw it."""

    @property
    def method(self) -> str:
        return str(self.request.get("method", ""))

    @property
    def tool(self) -> str | None:
        """For `tools/call`, the tool's name."""
        return tool_name(self.request)


@dataclass(frozen=True, slots=True)
class Notice:
    """A notification the server sent."""

    message: dict[str, Any]
    """`{"method": ..., "params"?: ...}`."""
    after: int
    """Calls answered on this lane when it crossed: re-emitted there at replay, never matched."""


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """A request the server sent the agent (sampling, elicitation, roots) and the agent's answer."""

    request: dict[str, Any]
    answer: dict[str, Any]
    after: int


Entry = Call | Notice | ServerRequest


def tool_name(request: dict[str, Any]) -> str | None:
    params = request.get("params")
    if request.get("method") == "tools/call" and isinstance(params, dict):
        name = params.get("name")
        return name if isinstance(name, str) else None
    return None


def without_id(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the lane stores it: its method or answer, without `id` and `jsonrpc`."""
    return {key: value for key, value in message.items() if key not in ("id", "jsonrpc")}


def comparable(request: dict[str, Any]) -> dict[str, Any]:
    """The request less its ignored knobs: the form two calls are compared in."""
    params = request.get("params")
    if not isinstance(params, dict):
        return request
    trimmed = copy.copy(params)
    meta = trimmed.get(META)
    if isinstance(meta, dict):
        kept = {key: value for key, value in meta.items() if key not in IGNORED_META}
        if kept:
            trimmed[META] = kept
        else:
            del trimmed[META]
    if request.get("method") == "initialize":
        for key in IGNORED_INITIALIZE:
            trimmed.pop(key, None)
    return {**request, "params": trimmed}


class CallMatcher:
    """Consume-once lookup over one lane's recorded calls."""

    def __init__(self, lane: str, entries: Sequence[Entry]) -> None:
        self.lane = lane
        self.calls = tuple(entry for entry in entries if isinstance(entry, Call))
        self._keys = [comparable(call.request) for call in self.calls]
        self._consumed = [False] * len(self.calls)

    def claim(self, request: dict[str, Any]) -> int | None:
        """The earliest unconsumed call equal to `request` (knobs aside), now consumed."""
        key = comparable(request)
        for index, recorded in enumerate(self._keys):
            if not self._consumed[index] and _exactly_equal(recorded, key):
                self._consumed[index] = True
                return index
        return None

    def unserved(self) -> list[int]:
        return [index for index, used in enumerate(self._consumed) if not used]

    def explain(self, number: int, request: dict[str, Any]) -> Divergence:
        """Why call `number` (1-based, in arrival order on this lane) matches nothing."""
        shown = describe(request)
        candidates = [index for index, used in enumerate(self._consumed) if not used]
        if not candidates:
            reason = f"all {len(self.calls)} recorded calls were already served"
            return Divergence(self.lane, number, None, (f"call: {shown}",), None, reason)
        index = self._closest(request, candidates)
        recorded = self.calls[index].request
        lines = (f"call: {shown}", *_envelope(recorded, request))
        fields = field_differences(comparable(recorded), comparable(request))
        reason = "" if fields.first is not None else "the calls are equal (no difference found)"
        return Divergence(
            self.lane,
            number,
            index + 1,
            lines,
            fields.first,
            reason,
            others=fields.shown[1:],
            unshown=fields.unshown,
        )

    def _closest(self, request: dict[str, Any], candidates: list[int]) -> int:
        """Same method and tool first, then earliest: a sequential agent is compared with the
        call it was expected to make next."""
        method, tool = request.get("method"), tool_name(request)

        def score(index: int) -> tuple[bool, bool, int]:
            call = self.calls[index]
            return (call.method == method, call.tool == tool, -index)

        return max(candidates, key=score)


def describe(request: dict[str, Any]) -> str:
    """`tools/call delete_file` or `initialize`: how a call is named in messages."""
    method = str(request.get("method", "?"))
    tool = tool_name(request)
    return f"{method} {tool}" if tool else method


def _envelope(recorded: dict[str, Any], replayed: dict[str, Any]) -> list[str]:
    if recorded.get("method") != replayed.get("method"):
        return [f"method: recorded {recorded.get('method')}, replayed {replayed.get('method')}"]
    a, b = tool_name(recorded), tool_name(replayed)
    if a != b:
        return [f"tool: recorded {a}, replayed {b}"]
    return []


def _exactly_equal(a: Any, b: Any) -> bool:
    """Equal as JSON with the types of numbers and booleans counting (1 is not true)."""
    return find_difference(a, b) is None

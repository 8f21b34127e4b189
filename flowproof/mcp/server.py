"""One declared MCP server's side of a flow, shared by every connection the agent opens to it.

Both transports (stdio through the stand-in, streamable HTTP through the listener) and both
phases meet here, so what a call means never depends on how it travelled:

- a `tools/call` of a tool the spec mocks (`result:`/`results:`) is answered here, in both
  phases, and never forwarded: the real server cannot run it;
- at replay every other call is answered from the recorded lane (earliest unconsumed match),
  and a call that matches nothing is a divergence;
- at record the transport forwards the call to the real server and reports the answer here.

Server notifications and server-initiated requests are kept with an `after` anchor (calls
answered so far); at replay they are handed back to the transport when the agent reaches that
point (`due`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flowproof.errors import ToolResultsExhausted
from flowproof.matching.divergence import Divergence, find_difference
from flowproof.mcp.lane import (
    META,
    PROTOCOL_VERSION,
    Call,
    CallMatcher,
    Entry,
    Notice,
    ServerRequest,
    describe,
    lane_name,
    tool_name,
)
from flowproof.mocks import MCP_TOOLS, ToolMocks
from flowproof.traffic import Traffic

DIVERGED = -32603
"""The JSON-RPC error code a call that matches nothing is answered with (internal error)."""


def tool_result(result: Any, request: dict[str, Any]) -> dict[str, Any]:
    """A spec `result:` as an MCP CallToolResult, for the protocol era `request` speaks.

    A mapping that already has `content` is taken as a whole CallToolResult (so a flow can
    mock `isError: true`). Any other value becomes one text item holding it (a string as is,
    anything else as JSON), and a mapping is also given as `structuredContent`, which clients
    validate against a tool's output schema. A request of the modern protocol (2026-07-28,
    which stamps its version into `_meta`) requires `resultType` on every result; older
    clients refuse keys they do not know, so only it gets one.
    """
    if isinstance(result, dict) and "content" in result:
        answer = dict(result)
    else:
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        answer = {"content": [{"type": "text", "text": text}]}
        if isinstance(result, dict):
            answer["structuredContent"] = result
    if _is_modern(request):
        answer.setdefault("resultType", "complete")
    return answer


def _is_modern(request: dict[str, Any]) -> bool:
    params = request.get("params")
    meta = params.get(META) if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION in meta


@dataclass(slots=True)
class McpServer:
    """A server's lane as it fills (record) or is served (replay)."""

    name: str
    traffic: Traffic
    mocks: ToolMocks
    recorded: Sequence[Entry] | None
    """The lane to serve from; None at record."""
    matcher: CallMatcher | None = None
    pending: list[Notice | ServerRequest] = field(default_factory=list)
    answered: int = 0
    """Calls answered on this lane so far: the anchor of anything the server sends next."""
    arrived: int = 0
    contacts: int = 0
    """Connections the agent opened (stand-in spawns, or HTTP requests)."""
    _mock_uses: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.traffic.lanes.setdefault(self.lane, [])
        if self.recorded is not None:
            self.matcher = CallMatcher(self.lane, self.recorded)
            self.pending = [e for e in self.recorded if isinstance(e, Notice | ServerRequest)]

    @property
    def lane(self) -> str:
        return lane_name(self.name)

    @property
    def replaying(self) -> bool:
        return self.matcher is not None

    def mocked_answer(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The mock's answer to a `tools/call` of a mocked tool, else None."""
        tool = tool_name(request)
        if tool is None or tool not in self.mocks:
            return None
        used = self._mock_uses.get(tool, 0)
        self._mock_uses[tool] = used + 1
        try:
            result = self.mocks[tool].result_for(tool, used, MCP_TOOLS)
        except ToolResultsExhausted as exc:
            self.traffic.fail(f"{self.lane}: {exc}")
            return {"error": {"code": DIVERGED, "message": f"flowproof: {exc}"}}
        return {"result": tool_result(result, request)}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """At replay: the answer to a call (a mock's, else the recorded one, else a divergence
        error), written into the lane."""
        answer = self.answer_here(request)
        assert answer is not None  # at replay every call is answered here
        return answer

    def answer_here(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a call without the real server: a mock (both phases), or at replay the
        recorded answer. None at record for a call the transport must forward. Either way the
        call is written into the lane here, except a forwarded one (`forwarded` does that)."""
        self.arrived += 1
        mocked = self.mocked_answer(request)
        if self.matcher is None:
            if mocked is not None:
                self._record(Call(request, mocked, mocked=True))
            return mocked
        index = self.matcher.claim(request)
        if index is None:
            divergence = self.matcher.explain(self.arrived, request)
            self.traffic.diverge(divergence)
            return _diverged(divergence)
        recorded = self.matcher.calls[index]
        answer = mocked if mocked is not None else recorded.answer
        self._record(Call(request, answer, mocked=mocked is not None))
        return answer

    def forwarded(self, request: dict[str, Any], answer: dict[str, Any]) -> None:
        """At record: the real server answered a forwarded call."""
        self._record(Call(request, answer))

    def notice(self, message: dict[str, Any]) -> None:
        """At record: the server sent a notification."""
        self.traffic.add(self.lane, Notice(message, self.answered))

    def server_request(self, request: dict[str, Any], answer: dict[str, Any]) -> None:
        """At record: the server asked the agent something, and the agent answered."""
        self.traffic.add(self.lane, ServerRequest(request, answer, self.answered))

    def due(self) -> list[Notice | ServerRequest]:
        """At replay: what the server sent before the call about to be answered, in order."""
        ready = [entry for entry in self.pending if entry.after <= self.answered]
        self.pending = [entry for entry in self.pending if entry.after > self.answered]
        return ready

    def check_server_answer(self, recorded: ServerRequest, answer: dict[str, Any]) -> None:
        """At replay: the agent's answer to a re-sent server request must be the recorded one."""
        self.traffic.add(self.lane, ServerRequest(recorded.request, answer, recorded.after))
        found = find_difference(recorded.answer, answer)
        if found is None:
            return
        self.arrived += 1
        position = list(self.recorded or ()).index(recorded) + 1
        envelope = (f"the agent's answer to the server's {describe(recorded.request)} changed",)
        self.traffic.diverge(Divergence(self.lane, self.arrived, position, envelope, found))

    def unserved(self) -> list[Call]:
        if self.matcher is None:
            return []
        return [self.matcher.calls[index] for index in self.matcher.unserved()]

    def _record(self, call: Call) -> None:
        self.traffic.add(self.lane, call)
        self.answered += 1


def _diverged(divergence: Divergence) -> dict[str, Any]:
    return {"error": {"code": DIVERGED, "message": f"flowproof: {divergence.headline}"}}

"""One declared MCP server's side of a flow, shared by every connection the agent opens to it.

Both transports (stdio through the stand-in, streamable HTTP through the listener) meet here,
so what a call means never depends on how it travelled. The phase is a class, chosen once by
the strategy (`RecordingServer`, `ReplayingServer`, over the shared `ToolServer`):

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
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import MCP_TOOLS, ToolMocks
from flowproof.live.traffic import Traffic
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
class ToolServer:
    """What both phases share: the mocked tools, the lane as it is written, the counts."""

    name: str
    traffic: Traffic
    mocks: ToolMocks
    _: KW_ONLY
    answered: int = 0
    """Calls answered on this lane so far: the anchor of anything the server sends next."""
    arrived: int = 0
    contacts: int = 0
    """Connections the agent opened (stand-in spawns, or HTTP requests)."""
    _mock_uses: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.traffic.lanes.setdefault(self.lane, [])

    @property
    def lane(self) -> str:
        return lane_name(self.name)

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

    def unserved_reason(self) -> str | None:
        """Why the lane failed once the agent has gone: recorded calls it never made (only a
        replayed lane has any)."""
        return None

    def _record(self, call: Call) -> None:
        self.traffic.add(self.lane, call)
        self.answered += 1


@dataclass(slots=True)
class RecordingServer(ToolServer):
    """A server's lane as it fills: mocks answer here, the transport forwards the rest to the
    real server and reports what it said."""

    def answer_here(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """A mocked tool's answer, written into the lane; None for a call the transport must
        forward (`forwarded` writes that one)."""
        self.arrived += 1
        mocked = self.mocked_answer(request)
        if mocked is not None:
            self._record(Call(request, mocked, mocked=True))
        return mocked

    def forwarded(self, request: dict[str, Any], answer: dict[str, Any]) -> None:
        """The real server answered a forwarded call."""
        self._record(Call(request, answer))

    def notice(self, message: dict[str, Any]) -> None:
        """The server sent a notification."""
        self.traffic.add(self.lane, Notice(message, self.answered))

    def server_request(self, request: dict[str, Any], answer: dict[str, Any]) -> None:
        """The server asked the agent something, and the agent answered."""
        self.traffic.add(self.lane, ServerRequest(request, answer, self.answered))


@dataclass(slots=True)
class ReplayingServer(ToolServer):
    """A server's recorded lane, served: every call is answered here, and what the server
    sent unprompted is handed back to the transport when the agent reaches that point."""

    recorded: Sequence[Entry]
    matcher: CallMatcher = field(init=False)
    pending: list[Notice | ServerRequest] = field(init=False)

    def __post_init__(self) -> None:
        ToolServer.__post_init__(self)
        self.matcher = CallMatcher(self.lane, self.recorded)
        self.pending = [e for e in self.recorded if isinstance(e, Notice | ServerRequest)]

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to a call (a mock's, else the recorded one, else a divergence error),
        written into the lane."""
        self.arrived += 1
        mocked = self.mocked_answer(request)
        index = self.matcher.claim(request)
        if index is None:
            divergence = self.matcher.explain(self.arrived, request)
            self.traffic.diverge(divergence)
            return _diverged(divergence)
        recorded = self.matcher.calls[index]
        answer = mocked if mocked is not None else recorded.answer
        self._record(Call(request, answer, mocked=mocked is not None))
        return answer

    def due(self) -> list[Notice | ServerRequest]:
        """What the server sent before the call about to be answered, in order."""
        ready = [entry for entry in self.pending if entry.after <= self.answered]
        self.pending = [entry for entry in self.pending if entry.after > self.answered]
        return ready

    def check_server_answer(self, recorded: ServerRequest, answer: dict[str, Any]) -> None:
        """The agent's answer to a re-sent server request must be the recorded one."""
        self.traffic.add(self.lane, ServerRequest(recorded.request, answer, recorded.after))
        found = find_difference(recorded.answer, answer)
        if found is None:
            return
        self.arrived += 1
        position = list(self.recorded).index(recorded) + 1
        envelope = (f"the agent's answer to the server's {describe(recorded.request)} changed",)
        self.traffic.diverge(Divergence(self.lane, self.arrived, position, envelope, found))

    def unserved(self) -> list[Call]:
        return [self.matcher.calls[index] for index in self.matcher.unserved()]

    def unserved_reason(self) -> str | None:
        left = self.unserved()
        if not left:
            return None
        total = len(self.matcher.calls)
        names = ", ".join(describe(call.request) for call in left[:5])
        more = f" and {len(left) - 5} more" if len(left) > 5 else ""
        return (
            f"{self.lane}: served {total - len(left)} of {total} recorded calls: the "
            f"agent finished without making {names}{more}"
        )


def _diverged(divergence: Divergence) -> dict[str, Any]:
    return {"error": {"code": DIVERGED, "message": f"flowproof: {divergence.headline}"}}

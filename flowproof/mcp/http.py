"""The streamable-HTTP stand-in: a loopback listener in place of a `url:` MCP server.

Its URL carries the flow's capability (flowproof/guards/capability.py) as the first segment of its
path: a request without it is refused 403 and only counted, the way the model proxy refuses
one. Below it, any path containing `/mcp` is the endpoint (a client that derives
`<base>/mcp-exec` from one base still lands here). Every POST is answered with one
`application/json` body in both phases; flowproof never turns a POST answer into an SSE stream.
What the server sends unprompted goes to the agent over the GET stream flowproof serves (one at
a time: a second concurrent GET is a 409), and an agent that never opens one leaves
notifications undelivered without hanging.

- Record: each POST is forwarded to the spec's `url:` (mcp/upstream.py) with the agent's
  `Authorization` and `Mcp-Session-Id` passed through and stored nowhere; an SSE answer's
  frames are read back into the one reply, its notifications and requests captured and pushed
  to the agent's GET stream. The agent's GET is bridged to the server's.
- Replay: answered from the lane with zero network; `initialize` hands out the session id
  `flowproof-replay`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from flowproof.core.tasks import create_task
from flowproof.guards.capability import Capability
from flowproof.mcp.lane import without_id
from flowproof.mcp.messages import (
    SERVER_REQUESTS,
    Message,
    Replayer,
    id_key,
    is_notification,
    is_request,
    parsed,
    refuse_batch,
    unsupported_server_request,
)
from flowproof.mcp.server import RecordingServer, ReplayingServer, ToolServer

if TYPE_CHECKING:
    from flowproof.mcp.upstream import HttpUpstream
    from flowproof.outbound.reach import Reach

LOOPBACK = "127.0.0.1"
ENDPOINT = "/mcp"
REPLAY_SESSION = "flowproof-replay"
MAX_BODY_BYTES = 64 * 1024 * 1024
STREAM_POLL_SECONDS = 0.5
_END = object()


@dataclass(slots=True)
class AgentStream:
    """The agent's open GET stream, if any: what is pushed here is sent to it."""

    queue: asyncio.Queue[Any] | None = None

    @property
    def is_open(self) -> bool:
        return self.queue is not None

    async def push(self, message: Message) -> bool:
        if self.queue is None:
            return False
        self.queue.put_nowait(message)
        return True


class HttpExchange(Protocol):
    """How the stand-in's endpoint is served, chosen once for the flow's phase."""

    async def post(
        self, message: Message, raw: bytes, request: web.Request
    ) -> web.StreamResponse: ...

    def on_get(self, request: web.Request) -> Coroutine[Any, Any, None]:
        """What runs while the agent's GET stream is open."""
        ...

    async def delete(self, request: web.Request) -> web.StreamResponse: ...

    async def close(self) -> None: ...


@dataclass(slots=True)
class HttpStandIn:
    server: ToolServer
    open_exchange: Callable[[AgentStream], HttpExchange]
    """Builds the phase's exchange once the listener serves (record opens its client then)."""
    port: int = 0
    url: str = ""
    stream: AgentStream = field(default_factory=AgentStream)
    capability: Capability = field(default_factory=Capability)
    """Set by the boundary to the flow's own before the stand-in serves."""

    @classmethod
    def replaying(cls, server: ReplayingServer, port: int = 0) -> HttpStandIn:
        return cls(server, lambda stream: ReplayExchange(server, stream), port)

    @classmethod
    def recording(
        cls, server: RecordingServer, upstream_url: str, reach: Reach, port: int = 0
    ) -> HttpStandIn:
        def exchange(stream: AgentStream) -> HttpExchange:
            from flowproof.mcp.upstream import HttpUpstream  # record only: replay has no client

            return RecordExchange(server, stream, HttpUpstream(upstream_url, reach))

        return cls(server, exchange, port)

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[HttpStandIn]:
        exchange = self.open_exchange(self.stream)
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handler(exchange))
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        await runner.setup()
        try:
            site = web.TCPSite(runner, LOOPBACK, self.port)
            await site.start()
            self.port = int(runner.addresses[0][1])
            self.url = f"http://{LOOPBACK}:{self.port}{self.capability.prefix}{ENDPOINT}"
            yield self
        finally:
            if self.stream.queue is not None:
                self.stream.queue.put_nowait(_END)
            await runner.cleanup()
            await exchange.close()

    def _handler(self, exchange: HttpExchange) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            path = self.capability.admit(request.path)
            if path is None:
                self.server.traffic.refuse_outsider(request.method, request.path)
                return _text(
                    403,
                    "flowproof: this MCP stand-in serves only the agent flowproof started, at "
                    "the URL flowproof gave it; the request's path did not start with it",
                )
            if ENDPOINT not in path:
                return _text(404, f"flowproof: the MCP endpoint is {self.url}")
            self.server.contacts += 1
            if request.method == "POST":
                return await self._post(request, exchange)
            if request.method == "GET":
                return await self._get(request, exchange)
            if request.method == "DELETE":
                return await exchange.delete(request)
            return _text(405, f"flowproof: {request.method} is not part of streamable HTTP")

        return handle

    async def _post(self, request: web.Request, exchange: HttpExchange) -> web.StreamResponse:
        raw = await request.read()
        message = parsed(raw)
        if isinstance(message, list):
            return _json(400, refuse_batch(self.server))
        if message is None:
            return _json(400, {"jsonrpc": "2.0", "id": None, "error": _err("not JSON-RPC")})
        return await exchange.post(message, raw, request)

    async def _get(self, request: web.Request, exchange: HttpExchange) -> web.StreamResponse:
        if self.stream.is_open:
            return _text(409, "flowproof: a GET stream is already open for this MCP server")
        queue: asyncio.Queue[Any] = asyncio.Queue()
        pump = create_task(exchange.on_get(request), name="mcp-get")
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        self.stream.queue = queue
        try:
            await response.prepare(request)
            while (message := await _next(queue, request)) is not _END:
                data = json.dumps(message, ensure_ascii=False)
                await response.write(f"event: message\ndata: {data}\n\n".encode())
        except ConnectionError:
            pass
        finally:
            self.stream.queue = None
            pump.cancel()
        return response


@dataclass(slots=True)
class ReplayExchange:
    """Replay: answered from the lane with zero network."""

    server: ReplayingServer
    stream: AgentStream
    replayer: Replayer = field(init=False)

    def __post_init__(self) -> None:
        self.replayer = Replayer(self.server, self.stream.push)

    async def post(self, message: Message, raw: bytes, request: web.Request) -> web.StreamResponse:
        if is_request(message):
            answer = await self.replayer.answer(message)
            session = (
                {"Mcp-Session-Id": REPLAY_SESSION} if message["method"] == "initialize" else {}
            )
            return _json(200, answer, session)
        if is_notification(message):
            await self.replayer.emit_due()
        else:
            self.replayer.answered(message)
        return web.Response(status=202)

    def on_get(self, request: web.Request) -> Coroutine[Any, Any, None]:
        return self.replayer.emit_due()

    async def delete(self, request: web.Request) -> web.StreamResponse:
        return web.Response(status=200)

    async def close(self) -> None:
        return None


@dataclass(slots=True)
class RecordExchange:
    """Record: every POST forwarded to the real server, what it says captured."""

    server: RecordingServer
    stream: AgentStream
    upstream: HttpUpstream
    _asked: dict[str, Message] = field(default_factory=dict)
    """The real server's requests relayed to the agent, awaiting its answer, by id."""

    async def post(self, message: Message, raw: bytes, request: web.Request) -> web.StreamResponse:
        if is_request(message):
            mocked = self.server.answer_here(without_id(message))
            if mocked is not None:
                return _json(200, {"jsonrpc": "2.0", "id": message["id"], **mocked})
        elif not is_notification(message):  # the agent answering the real server
            asked = self._asked.pop(id_key(message), None)
            if asked is not None:
                self.server.server_request(asked, without_id(message))
        reply: list[Message] = []

        async def on_message(received: Message) -> None:
            if is_request(message) and _answers(received, message):
                reply.append(received)
            else:
                await self._from_server(received)

        try:
            answer = await self.upstream.post(raw, request.headers, on_message)
        except _unreachable() as exc:
            self.server.traffic.fail(f"{self.server.lane}: {exc}")
            return _json(
                502, {"jsonrpc": "2.0", "id": message.get("id"), "error": _err(f"flowproof: {exc}")}
            )
        if not is_request(message):
            return web.Response(status=answer.status, headers=answer.headers)
        if reply:
            found = without_id(reply[0])
        else:
            detail = answer.text.strip() or "no JSON-RPC answer"
            found = {"error": {"code": -32000, "message": f"HTTP {answer.status}: {detail}"}}
        self.server.forwarded(without_id(message), found)
        body = {"jsonrpc": "2.0", "id": message["id"], **found}
        return _json(answer.status, body, answer.headers)

    def on_get(self, request: web.Request) -> Coroutine[Any, Any, None]:
        # The agent's stream opens at once, whatever the real server says to its own GET
        # (405 included): flowproof relays the messages inline in POST answers on it too.
        return self._bridge(request)

    async def delete(self, request: web.Request) -> web.StreamResponse:
        try:
            answer = await self.upstream.delete(request.headers)
        except _unreachable():  # the session's end: not worth failing the flow
            return web.Response(status=204)
        return web.Response(status=answer.status, headers=answer.headers)

    async def close(self) -> None:
        await self.upstream.close()

    async def _from_server(self, message: Message) -> None:
        """A message the server sent that answers no POST, for the GET stream."""
        if is_request(message):
            method = str(message.get("method"))
            if method not in SERVER_REQUESTS:
                unsupported_server_request(self.server, method)
                return
            if not self.stream.is_open:
                self.server.traffic.fail(
                    f"{self.server.lane}: the real MCP server sent a server-initiated request "
                    f"({method}), and the agent has no GET stream open for flowproof to relay "
                    "it on"
                )
                return
            self._asked[id_key(message)] = without_id(message)
        elif is_notification(message):
            self.server.notice(without_id(message))
        else:
            return  # an answer to nothing the agent asked: not the agent's business
        await self.stream.push(message)

    async def _bridge(self, request: web.Request) -> None:
        try:
            await self.upstream.get(request.headers, self._from_server)
        except _unreachable():  # a server-push stream that breaks off just ends
            return


async def _next(queue: asyncio.Queue[Any], request: web.Request) -> Any:
    """The next message for the GET stream, or _END once the agent has hung up: aiohttp does
    not cancel a handler whose client went away, and a stream held open for a gone agent
    would refuse its next GET as a second one."""
    while True:
        try:
            return await asyncio.wait_for(queue.get(), STREAM_POLL_SECONDS)
        except TimeoutError:
            if request.transport is None or request.transport.is_closing():
                return _END


def _unreachable() -> type[Exception]:
    """mcp/upstream.py's error, imported only at record (replay never loads a client)."""
    from flowproof.mcp.upstream import Unreachable

    return Unreachable


def _answers(received: Message, request: Message) -> bool:
    """Whether `received` is the answer to `request` (a 4xx error may carry id null)."""
    if "method" in received:
        return False
    return received.get("id") == request.get("id") or received.get("id") is None


def _err(text: str) -> dict[str, Any]:
    return {"code": -32600, "message": text}


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        text=json.dumps(body, ensure_ascii=False),
        content_type="application/json",
        headers=headers or {},
    )


def _text(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text)

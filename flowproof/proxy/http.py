"""The proxy's HTTP/1.1 server: what model clients send on loopback, and nothing more.

A model call is one request with a JSON body and one answer written whole (a JSON body, or the
frames of a synthesized stream, which exist in full before the first is written). That needs
a request line, headers, a body (`Content-Length`, or `chunked` as some clients send it),
`Expect: 100-continue` (curl asks it for any body over 1 KB), keep-alive and pipelining on one
connection. It needs no routing, middleware, cookies, multipart or a client, which is most of
what aiohttp.web brings: measured (bench/results/bench-2026-12-01.md), aiohttp's server
machinery was ~60% of the proxy's CPU per replayed request, and importing aiohttp (which
builds its client's SSL contexts at import) a quarter of the engine's start-up. Only record
imports aiohttp now, for its client (outbound/reach.py).

The requests are read by a strict, sans-IO parser (proxy/h1.py), which refuses whatever
framing a request leaves open to two readings before any handler sees it.

The server listens on 127.0.0.1 only (`serve`); it answers anyone who can connect, so it must
not be reachable off the machine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus

from flowproof.core.tasks import create_task
from flowproof.proxy.h1 import Request, RequestParser, ServerError

LOOPBACK = "127.0.0.1"
_READ_BYTES = 64 * 1024
"""The most one read takes from a connection (a model call's body is usually a few KB)."""


@dataclass(frozen=True, slots=True)
class Response:
    """An answer written whole: `body`, or (`chunks` not None) each chunk as one chunk of a
    `Transfer-Encoding: chunked` body (a synthesized event stream)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: Sequence[bytes] | None = None
    wire: dict[bool, tuple[bytes, bytes]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Its head and the whole of it as written, by keep-alive, once encoded: replay serves one
    response, rendered once per turn, to every request of those bytes."""


def json_response(status: int, body: object, headers: Mapping[str, str] | None = None) -> Response:
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return Response(status, {"Content-Type": "application/json", **(headers or {})}, text.encode())


Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the server refused before it was whole: what `serve`'s `on_refusal` hears."""

    status: int
    why: str
    method: str
    """As the request line said, or "?" when it could not be read."""
    path: str
    """The request's path (`/v1/messages`, without the query, which may carry a key), or "?"."""


@dataclass
class Server:
    """A listening server and its open connections; `cleanup` stops all of it."""

    _server: asyncio.Server
    _connections: set[_Connection]

    @property
    def port(self) -> int:
        return int(self._server.sockets[0].getsockname()[1])

    async def cleanup(self) -> None:
        self._server.close()
        connections = list(self._connections)
        for connection in connections:
            connection.abort()
        await self._server.wait_closed()
        # Each connection's loop ends once it hears its connection is gone (cancelled, or it
        # was closing anyway): nothing of the server is left running after this.
        await asyncio.gather(*(c.ended() for c in connections), return_exceptions=True)


async def serve(
    handler: Handler,
    port: int = 0,
    max_body: int = 64 * 1024 * 1024,
    on_refusal: Callable[[Refusal], None] | None = None,
) -> Server:
    """Listen on 127.0.0.1:`port` (0: any free port) and answer every request with `handler`;
    a request refused before it is whole is answered 4xx here and told to `on_refusal`."""
    connections: set[_Connection] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Connection(handler, connections, max_body, on_refusal),
        LOOPBACK,
        port,
        reuse_address=True,
    )
    return Server(server, connections)


class _Connection(asyncio.BufferedProtocol):
    """One client connection: the protocol feeds what arrives to the parser, and one loop
    (`_serve`, the connection's task) answers the requests in the order they came, each once
    the one before it is answered (a pipelined request waits for the answer before it).

    Bytes are read into one buffer the connection keeps (`BufferedProtocol`), not into a fresh
    one per read: a plain `Protocol` has asyncio allocate `max_size` (256 KiB) for every read,
    which the allocator maps, shrinks and unmaps each time. Measured at 8 clients, that was
    about a fifth of the proxy's CPU per replayed request
    (bench/results/replay-table-2026-12-06.md)."""

    def __init__(
        self,
        handler: Handler,
        registry: set[_Connection],
        max_body: int,
        on_refusal: Callable[[Refusal], None] | None,
    ) -> None:
        self._handler = handler
        self._registry = registry
        self._parser = RequestParser(max_body)
        self._on_refusal = on_refusal
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None
        self._arrived: asyncio.Future[None] | None = None
        """What the loop waits on while it needs more bytes: set when some arrive, or when
        the client shuts down its sending side."""
        self._client_done = False
        """The client shut down its sending side: answer what it sent, then close."""
        self._read_into = memoryview(bytearray(_READ_BYTES))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._registry.add(self)
        self._task = create_task(self._serve(), name="proxy-connection")

    def connection_lost(self, exc: Exception | None) -> None:
        self._registry.discard(self)
        self._transport = None
        if self._task is not None:
            self._task.cancel()  # a handler still waiting (on record's upstream) is stopped

    def eof_received(self) -> bool:
        # A client may send its request and shut down its sending side at once: it is still
        # waiting for the answer, so keep the transport open for writing until it is given.
        self._client_done = True
        self._wake()
        return True

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    async def ended(self) -> None:
        """Once the connection's loop has ended."""
        if self._task is not None:
            await asyncio.wait((self._task,))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._read_into

    def buffer_updated(self, nbytes: int) -> None:
        self._parser.feed(self._read_into[:nbytes].tobytes())
        self._wake()

    def _wake(self) -> None:
        arrived = self._arrived
        if arrived is not None:
            self._arrived = None
            if not arrived.done():  # (done: cancelled with the connection's loop)
                arrived.set_result(None)

    async def _serve(self) -> None:
        """Answer each request once it has all arrived, in order, until the connection closes:
        after an answer that does not keep it alive, a refusal, or the client's last request."""
        parser, create_future = self._parser, asyncio.get_running_loop().create_future
        while (transport := self._transport) is not None:
            try:
                # (Nothing unread, nothing to parse: the common case once a request is answered.)
                parsed = parser.next_request() if parser.pending else None
            except ServerError as refused:
                self._refuse(transport, refused)
                return
            except Exception as exc:  # noqa: BLE001 - a bug of ours is a 500 that fails the flow
                self._refuse(
                    transport, ServerError(500, f"flowproof's HTTP parser failed: {exc!r}")
                )
                return
            if parsed is None:
                if not self._waits_for_more(transport):
                    return
                self._arrived = create_future()
                await self._arrived  # (`_wake` sets it, and clears it)
                continue
            request, keep_alive = parsed
            try:
                response = await self._handler(request)
            except Exception:  # noqa: BLE001 - the client gets a 500, the flow's own checks stand
                response, keep_alive = _plain(500, "flowproof: internal error in the proxy"), False
            if transport.is_closing():
                return
            transport.write(_encode(response, keep_alive, head_only=request.method == "HEAD"))
            if not keep_alive:
                transport.close()
                return

    def _waits_for_more(self, transport: asyncio.Transport) -> bool:
        """Whether the client may still send more of what is in progress (False once it sent
        its last, and all that came is answered: then the connection is closed)."""
        if self._parser.take_continue():
            # The client waits for this (`Expect: 100-continue`) before sending its body.
            transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        elif self._client_done:
            transport.close()
            return False
        return True

    def _refuse(self, transport: asyncio.Transport, refused: ServerError) -> None:
        """Answer the refusal and close: after a framing error nothing that follows on this
        connection can be told apart from the body, so none of it is read (no smuggling)."""
        method, target = self._parser.request_line()
        if self._on_refusal is not None:
            self._on_refusal(Refusal(refused.status, str(refused), method, target))
        transport.write(_encode(_plain(refused.status, str(refused)), False))
        transport.close()


def _plain(status: int, message: str) -> Response:
    return json_response(status, {"error": {"message": message, "type": "flowproof_error"}})


def _encode(response: Response, keep_alive: bool, head_only: bool = False) -> bytes:
    """The response's bytes, head and payload in one piece (one write, one send)."""
    encoded = response.wire.get(keep_alive)
    if encoded is None:
        encoded = response.wire[keep_alive] = _encoded(response, keep_alive)
    head, whole = encoded
    return head if head_only else whole


def _encoded(response: Response, keep_alive: bool) -> tuple[bytes, bytes]:
    reason = _REASONS.get(response.status, "")
    head = [f"HTTP/1.1 {response.status} {reason}"]
    head += [f"{name}: {value}" for name, value in response.headers.items()]
    if response.chunks is None:
        head.append(f"Content-Length: {len(response.body)}")
        payload = response.body
    else:
        head.append("Transfer-Encoding: chunked")
        parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in response.chunks if chunk]
        payload = b"".join(parts) + b"0\r\n\r\n"
    if not keep_alive:
        head.append("Connection: close")
    encoded = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
    return encoded, encoded + payload


_REASONS = {status.value: status.phrase for status in HTTPStatus}

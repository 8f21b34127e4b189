"""The proxy's HTTP/1.1 server: what model clients send on loopback, and nothing more.

A model call is one request with a JSON body and one answer written whole (a JSON body, or the
frames of a synthesized stream, which exist in full before the first is written). That needs
a request line, headers, a body (`Content-Length`, or `chunked` as some clients send it),
`Expect: 100-continue` (curl asks it for any body over 1 KB), keep-alive and pipelining on one
connection. It needs no routing, middleware, cookies, multipart or a client, which is most of
what aiohttp.web brings: measured (docs/performance.md), aiohttp's server machinery was ~60% of
the proxy's CPU per replayed request, and importing aiohttp (which builds its client's SSL
contexts at import) a quarter of the engine's start-up. Only record imports aiohttp now, for
its client (proxy/forward.py).

The requests are read by a strict, sans-IO parser (proxy/h1.py), which refuses whatever
framing a request leaves open to two readings before any handler sees it.

The server listens on 127.0.0.1 only (`serve`); it answers anyone who can connect, so it must
not be reachable off the machine.
"""

from __future__ import annotations

import asyncio
import json
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

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
AtOnce = Callable[[Request], Response | None]
"""A handler's lane for the requests it can answer without waiting on anything: the answer,
or None for the handler to give. It must not raise (a bug of its own is its 500 to give)."""


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
        for connection in list(self._connections):
            connection.abort()
        await self._server.wait_closed()


async def serve(
    handler: Handler,
    port: int = 0,
    max_body: int = 64 * 1024 * 1024,
    on_refusal: Callable[[Refusal], None] | None = None,
    at_once: AtOnce | None = None,
) -> Server:
    """Listen on 127.0.0.1:`port` (0: any free port) and answer every request with `handler`
    (first `at_once`, when given); a request refused before it is whole is answered 4xx here
    and told to `on_refusal`."""
    connections: set[_Connection] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Connection(handler, at_once, connections, max_body, on_refusal),
        LOOPBACK,
        port,
        reuse_address=True,
    )
    return Server(server, connections)


class _Connection(asyncio.BufferedProtocol):
    """One client connection: requests parsed as bytes arrive, answered one at a time in the
    order they came (a pipelined request waits for the answer before it).

    Bytes are read into one buffer the connection keeps (`BufferedProtocol`), not into a fresh
    one per read: a plain `Protocol` has asyncio allocate `max_size` (256 KiB) for every read,
    which the allocator maps, shrinks and unmaps each time. Measured at 8 clients, that was
    about a fifth of the proxy's CPU per replayed request (docs/performance.md)."""

    def __init__(
        self,
        handler: Handler,
        at_once: AtOnce | None,
        registry: set[_Connection],
        max_body: int,
        on_refusal: Callable[[Refusal], None] | None,
    ) -> None:
        self._handler = handler
        self._at_once = at_once
        self._registry = registry
        self._parser = RequestParser(max_body)
        self._on_refusal = on_refusal
        self._transport: asyncio.Transport | None = None
        self._busy = False
        """A request is being answered, or the connection was refused: parse nothing now."""
        self._task: asyncio.Task[None] | None = None
        self._client_done = False
        """The client shut down its sending side: answer what it sent, then close."""
        self._read_into = memoryview(bytearray(_READ_BYTES))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._registry.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._registry.discard(self)
        self._transport = None
        if self._task is not None:
            self._task.cancel()

    def eof_received(self) -> bool:
        # A client may send its request and shut down its sending side at once: it is still
        # waiting for the answer, so keep the transport open for writing until it is given.
        self._client_done = True
        if not self._busy:
            self._next()  # and closes once all that came is answered
        return True

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._read_into

    def buffer_updated(self, nbytes: int) -> None:
        self._parser.feed(self._read_into[:nbytes].tobytes())
        if not self._busy:
            self._next()

    def _next(self) -> None:
        """Answer the requests at the head of the buffer that have all arrived, in order.

        `at_once` answers what it can with no coroutine at all. A handler that finishes
        without suspending (replay's slow lane) is run to its end right here, so its request
        costs no Task and no turn of the event loop; one that suspends (record waiting on the
        upstream) goes on in a Task, and the requests behind it wait for it."""
        while True:
            try:
                parsed = self._parser.next_request()
            except ServerError as refused:
                self._refuse(refused)
                return
            except Exception as exc:  # noqa: BLE001 - a bug of ours is a 500 that fails the flow
                self._refuse(ServerError(500, f"flowproof's HTTP parser failed: {exc!r}"))
                return
            if parsed is None:
                self._wait_for_more()
                return
            request, keep_alive = parsed
            self._busy = True
            response = self._at_once(request) if self._at_once is not None else None
            if response is not None:
                self._write(request, response, keep_alive)
            else:
                answering = self._answer(request, keep_alive)
                try:
                    suspended_on = answering.send(None)
                except StopIteration:
                    pass
                else:
                    self._task = create_task(
                        self._go_on(_resumed(answering, suspended_on)), name="proxy-request"
                    )
                    return
            if self._busy:  # the connection was closed
                return
            if not self._parser.pending:  # (the common case: nothing pipelined behind it)
                self._wait_for_more()
                return

    def _wait_for_more(self) -> None:
        transport = self._transport
        if transport is None:
            return
        if self._parser.take_continue():
            # The client waits for this (`Expect: 100-continue`) before sending its body.
            transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        elif self._client_done:
            transport.close()  # everything the client sent is answered

    async def _go_on(self, answering: Awaitable[None]) -> None:
        await answering
        self._task = None
        if not self._busy:
            self._next()

    async def _answer(self, request: Request, keep_alive: bool) -> None:
        """Answer `request`; `_busy` stays True when the connection is closed after it."""
        try:
            response = await self._handler(request)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the client gets a 500, the flow's own checks stand
            response = _plain(500, "flowproof: internal error in the proxy")
            keep_alive = False
        self._write(request, response, keep_alive)

    def _write(self, request: Request, response: Response, keep_alive: bool) -> None:
        """Write the answer to `request`; `_busy` stays True when the connection is closed."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.write(_encode(response, keep_alive, head_only=request.method == "HEAD"))
        if keep_alive:
            self._busy = False
        else:
            transport.close()

    def _refuse(self, refused: ServerError) -> None:
        """Answer the refusal and close: after a framing error nothing that follows on this
        connection can be told apart from the body, so none of it is read (no smuggling)."""
        self._busy = True
        method, target = self._parser.request_line()
        if self._on_refusal is not None:
            self._on_refusal(Refusal(refused.status, str(refused), method, target))
        if self._transport is not None:
            self._transport.write(_encode(_plain(refused.status, str(refused)), False))
            self._transport.close()


@types.coroutine
def _resumed(started: Coroutine[Any, Any, None], suspended_on: object) -> Generator[Any, Any, None]:
    """The rest of `started`, a coroutine that was run by hand until it first suspended (on
    `suspended_on`), for a Task to carry on: what the Task sends or throws goes on to it."""
    waiting_on = suspended_on
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            started.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - a cancellation is the coroutine's to see
            try:
                waiting_on = started.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waiting_on = started.send(sent)
            except StopIteration:
                return


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

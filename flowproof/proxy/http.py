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

The server listens on 127.0.0.1 only (`serve`); it answers anyone who can connect, so it must
not be reachable off the machine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import unquote

from flowproof._tasks import create_task

LOOPBACK = "127.0.0.1"
MAX_HEAD_BYTES = 64 * 1024
"""A request line and headers longer than this are refused (431): no model client sends that."""


class Headers(Mapping[str, str]):
    """Request headers: looked up case-insensitively, iterated under the names the client
    used. A header sent more than once reads as its values joined by `, ` (RFC 9110 §5.3)."""

    __slots__ = ("_by_lower",)

    def __init__(self, pairs: Sequence[tuple[str, str]] = ()) -> None:
        self._by_lower: dict[str, tuple[str, str]] = {}
        for name, value in pairs:
            lower = name.lower()
            if lower in self._by_lower:
                first, values = self._by_lower[lower]
                self._by_lower[lower] = (first, f"{values}, {value}")
            else:
                self._by_lower[lower] = (name, value)

    def __getitem__(self, name: str) -> str:
        return self._by_lower[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._by_lower

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._by_lower.values())

    def __len__(self) -> int:
        return len(self._by_lower)


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    """Percent-decoded, without the query."""
    query_string: str
    path_qs: str
    """The target as the client sent it: `/v1/messages?beta=true`."""
    headers: Headers
    body: bytes


@dataclass(frozen=True, slots=True)
class Response:
    """An answer written whole: `body`, or (`chunks` not None) each chunk as one chunk of a
    `Transfer-Encoding: chunked` body (a synthesized event stream)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: Sequence[bytes] | None = None


def json_response(status: int, body: object, headers: Mapping[str, str] | None = None) -> Response:
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return Response(status, {"Content-Type": "application/json", **(headers or {})}, text.encode())


Handler = Callable[[Request], Awaitable[Response]]


class ServerError(Exception):
    """A request this server refuses before any handler sees it."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


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


async def serve(handler: Handler, port: int = 0, max_body: int = 64 * 1024 * 1024) -> Server:
    """Listen on 127.0.0.1:`port` (0: any free port) and answer every request with `handler`."""
    connections: set[_Connection] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Connection(handler, connections, max_body), LOOPBACK, port, reuse_address=True
    )
    return Server(server, connections)


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed as bytes arrive, answered one at a time in the
    order they came (a pipelined request waits for the answer before it)."""

    def __init__(self, handler: Handler, registry: set[_Connection], max_body: int) -> None:
        self._handler = handler
        self._registry = registry
        self._max_body = max_body
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self._continued = False
        """100 Continue already sent for the request at the head of the buffer."""
        self._client_done = False
        """The client shut down its sending side: answer what it sent, then close."""

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
            self._next()
            if not self._busy and self._transport is not None:
                self._transport.close()
        return True

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if not self._busy:
            self._next()

    def _next(self) -> None:
        """Start answering the request at the head of the buffer, if it has all arrived."""
        try:
            parsed = _parse(self._buffer, self._max_body)
        except ServerError as refused:
            self._refuse(refused)
            return
        if parsed is None:
            self._maybe_continue()
            return
        request, consumed, keep_alive = parsed
        del self._buffer[:consumed]
        self._continued = False
        self._busy = True
        self._task = create_task(self._answer(request, keep_alive), name="proxy-request")

    async def _answer(self, request: Request, keep_alive: bool) -> None:
        try:
            response = await self._handler(request)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the client gets a 500, the flow's own checks stand
            response = _plain(500, "flowproof: internal error in the proxy")
            keep_alive = False
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.write(_encode(response, keep_alive, head_only=request.method == "HEAD"))
        self._busy = False
        self._task = None
        if self._buffer and keep_alive:
            self._next()
        if not keep_alive or (self._client_done and not self._busy):
            transport.close()

    def _maybe_continue(self) -> None:
        """Tell a client that waits for it (`Expect: 100-continue`) to send its body."""
        if self._continued or self._transport is None:
            return
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self._buffer[:end]).lower()
        if b"\r\nexpect: 100-continue" in head or b"\r\nexpect:100-continue" in head:
            self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self._continued = True

    def _refuse(self, refused: ServerError) -> None:
        if self._transport is not None:
            self._transport.write(_encode(_plain(refused.status, str(refused)), False))
            self._transport.close()
        self._buffer.clear()


def _plain(status: int, message: str) -> Response:
    return json_response(status, {"error": {"message": message, "type": "flowproof_error"}})


def _parse(buffer: bytearray, max_body: int) -> tuple[Request, int, bool] | None:
    """The first whole request in `buffer`, how many bytes it took, and whether the
    connection stays open after it; None while it is still arriving."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > MAX_HEAD_BYTES:
            raise ServerError(431, "request headers too large")
        return None
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    try:
        method, target, version = lines[0].split(" ")
    except ValueError:
        raise ServerError(400, f"not an HTTP request line: {lines[0][:80]!r}") from None
    if not version.startswith("HTTP/1."):
        raise ServerError(505, f"{version} is not served; use HTTP/1.1")
    pairs = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise ServerError(400, f"not a header line: {line[:80]!r}")
        pairs.append((name, value.strip()))
    headers = Headers(pairs)
    start = end + 4
    body_and_end = _body(buffer, start, headers, max_body)
    if body_and_end is None:
        return None
    body, consumed = body_and_end
    connection = headers.get("Connection", "").lower()
    keep_alive = "close" not in connection and (version != "HTTP/1.0" or "keep-alive" in connection)
    if target.startswith(("http://", "https://")):  # absolute form: keep the path
        target = "/" + target.split("/", 3)[3] if target.count("/") >= 3 else "/"
    raw_path, _, query = target.partition("?")
    request = Request(method, unquote(raw_path), query, target, headers, body)
    return request, consumed, keep_alive


def _body(
    buffer: bytearray, start: int, headers: Headers, max_body: int
) -> tuple[bytes, int] | None:
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return _chunked(buffer, start, max_body)
    try:
        length = int(headers.get("Content-Length", "0"))
    except ValueError:
        raise ServerError(400, "Content-Length is not a number") from None
    if length < 0:
        raise ServerError(400, "Content-Length is negative")
    if length > max_body:
        raise ServerError(413, f"the request body is over {max_body} bytes")
    if len(buffer) - start < length:
        return None
    return bytes(buffer[start : start + length]), start + length


def _chunked(buffer: bytearray, start: int, max_body: int) -> tuple[bytes, int] | None:
    body = bytearray()
    position = start
    while True:
        line_end = buffer.find(b"\r\n", position)
        if line_end < 0:
            return None
        size_text = bytes(buffer[position:line_end]).split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ServerError(400, "a chunk size is not hexadecimal") from None
        position = line_end + 2
        if size == 0:  # then trailer fields, if any, up to a blank line
            while (line_end := buffer.find(b"\r\n", position)) != position:
                if line_end < 0:
                    return None
                position = line_end + 2
            return bytes(body), position + 2
        if len(body) + size > max_body:
            raise ServerError(413, f"the request body is over {max_body} bytes")
        if len(buffer) < position + size + 2:
            return None
        body += buffer[position : position + size]
        position += size + 2


def _encode(response: Response, keep_alive: bool, head_only: bool = False) -> bytes:
    reason = _REASONS.get(response.status, "")
    head = [f"HTTP/1.1 {response.status} {reason}"]
    head += [f"{name}: {value}" for name, value in response.headers.items()]
    if response.chunks is None:
        head.append(f"Content-Length: {len(response.body)}")
        payload = b"" if head_only else response.body
    else:
        head.append("Transfer-Encoding: chunked")
        parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in response.chunks if chunk]
        payload = b"" if head_only else b"".join(parts) + b"0\r\n\r\n"
    if not keep_alive:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


_REASONS = {status.value: status.phrase for status in HTTPStatus}

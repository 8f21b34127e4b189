"""A small forward proxy the tests run, as a company proxy would sit between record and a
provider: CONNECT tunnels (for an https upstream) and absolute-form requests (`POST
http://host:port/path`, for an http one).

It alone can resolve the names in its `hosts` table (a test maps `api.provider.test` to the
loopback address the scripted upstream listens on); any other name is answered 502, so nothing
it relays leaves the machine. Every request it was asked to relay is kept in `seen`, with the
Proxy-Authorization it carried; with `credentials` set, a request without them is answered 407.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from dataclasses import dataclass, field

from tests.netns import join_netns


@dataclass(frozen=True)
class Seen:
    method: str
    target: str
    """`host:port` for CONNECT, the absolute URL otherwise."""
    authorization: str | None


@dataclass
class ConnectProxy:
    hosts: dict[str, str]
    """name → IP address: the only names this proxy resolves."""
    credentials: str | None = None
    """`user:password` it requires in Proxy-Authorization (Basic), or None for none."""
    seen: list[Seen] = field(default_factory=list)
    port: int = 0

    def start(self, netns_pid: int | None = None) -> None:
        """Listen on 127.0.0.1 (inside the network namespace of `netns_pid`, when given)."""
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def serve() -> None:
            if netns_pid is not None:
                join_netns(netns_pid)
            asyncio.set_event_loop(self._loop)
            server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0)
            )
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            server.close()
            self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

        self._thread = threading.Thread(target=serve, name="connect-proxy", daemon=True)
        self._thread.start()
        assert ready.wait(10), "the CONNECT proxy did not start"

    def stop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def url(self, credentials: str | None = None) -> str:
        userinfo = f"{credentials}@" if credentials else ""
        return f"http://{userinfo}127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            return
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _version = request_line.split(" ", 2)
        headers = [line for line in header_lines if line]
        authorization = _header(headers, "proxy-authorization")
        self.seen.append(Seen(method, target, authorization))
        if self.credentials is not None and authorization != _basic(self.credentials):
            await _answer(writer, "407 Proxy Authentication Required", "Proxy-Authenticate: Basic")
            return
        if method == "CONNECT":
            await self._tunnel(target, reader, writer)
        else:
            await self._relay(method, target, headers, reader, writer)

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, _, port = target.rpartition(":")
        upstream = await self._open(host, int(port), writer)
        if upstream is None:
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await _pipe_both(reader, writer, *upstream)

    async def _relay(
        self,
        method: str,
        target: str,
        headers: list[str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """An absolute-form request, sent on in origin form over a connection of its own."""
        if not target.startswith("http://"):
            await _answer(writer, "400 Bad Request")
            return
        authority, _, path = target.removeprefix("http://").partition("/")
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "80")
        length = int(_header(headers, "content-length") or 0)
        body = await reader.readexactly(length)
        upstream = await self._open(host, int(port), writer)
        if upstream is None:
            return
        up_reader, up_writer = upstream
        kept = [
            line
            for line in headers
            if line.split(":", 1)[0].strip().lower()
            not in ("proxy-authorization", "proxy-connection", "connection")
        ]
        outbound = [f"{method} /{path} HTTP/1.1", *kept, "Connection: close", "", ""]
        up_writer.write("\r\n".join(outbound).encode("latin-1") + body)
        await up_writer.drain()
        await _pipe(up_reader, writer)  # the answer, until the upstream closes
        up_writer.close()

    async def _open(
        self, host: str, port: int, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        address = self.hosts.get(host.strip("[]").lower())
        if address is None:
            await _answer(writer, "502 Bad Gateway")  # a name only the test's table holds
            return None
        try:
            return await asyncio.open_connection(address, port)  # noqa: TID251 (the test proxy)
        except OSError:
            await _answer(writer, "502 Bad Gateway")
            return None


def _header(headers: list[str], name: str) -> str | None:
    for line in headers:
        key, _, value = line.partition(":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def _basic(credentials: str) -> str:
    return "Basic " + base64.b64encode(credentials.encode()).decode()


async def _answer(writer: asyncio.StreamWriter, status: str, *headers: str) -> None:
    lines = [f"HTTP/1.1 {status}", *headers, "Content-Length: 0", "Connection: close", "", ""]
    writer.write("\r\n".join(lines).encode())
    await writer.drain()
    writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _pipe_both(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    await asyncio.gather(_pipe(client_reader, up_writer), _pipe(up_reader, client_writer))

"""The engine's end of the stdio stand-ins: a loopback control listener and one relay per
connection.

Each stand-in the agent spawns connects here, names its server and presents the run's token;
anything else is dropped. Then its lines are the agent's JSON-RPC messages:

- at replay they are answered from the lane (mcp/server.py) with the agent's own ids, and what
  the server sent unprompted is re-emitted when the agent reaches its anchor;
- at record a real server is started from the spec's `command:` for this connection, every
  line is relayed both ways and captured, and mocked tools are answered here and never
  reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import shlex
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from flowproof.core.tasks import create_task
from flowproof.guards.spellings import clip, last_lines
from flowproof.host.engine_argv import engine_argv
from flowproof.host.processes import GRACE_SECONDS, owned_process, stop_tree
from flowproof.mcp.lane import without_id
from flowproof.mcp.messages import (
    SERVER_REQUESTS,
    Message,
    Replayer,
    Send,
    id_key,
    is_notification,
    is_request,
    parsed,
    refuse_batch,
    unsupported_server_request,
)
from flowproof.mcp.server import RecordingServer, ReplayingServer, ToolServer
from flowproof.mcp.standin import COMMAND, FLUSH_SECONDS

LOOPBACK = "127.0.0.1"
LINE_LIMIT = 64 * 1024 * 1024
"""The longest JSON-RPC line relayed (a tool may return a base64 image)."""
STDERR_TAIL = 2000


@dataclass(slots=True)
class RealServer:
    """How to start one declared server's real process at record."""

    command: str
    env: Mapping[str, str]


class StdioRelays(Protocol):
    """What serves one stand-in's connection, chosen once for the flow's phase."""

    def server(self, name: str) -> ToolServer | None:
        """The declared server `name`, if there is one."""

    async def relay(self, name: str, reader: asyncio.StreamReader, send: Send) -> None:
        """Serve one connection to server `name` until the agent closes it."""


@dataclass(frozen=True, slots=True)
class ReplayRelays:
    """At replay: every connection is answered from its server's recorded lane."""

    servers: Mapping[str, ReplayingServer]

    def server(self, name: str) -> ToolServer | None:
        return self.servers.get(name)

    async def relay(self, name: str, reader: asyncio.StreamReader, send: Send) -> None:
        await _replay(self.servers[name], reader, send)


@dataclass(frozen=True, slots=True)
class RecordRelays:
    """At record: every connection starts its own real server and is relayed to it."""

    servers: Mapping[str, RecordingServer]
    real: Mapping[str, RealServer]
    """How to start each server."""

    def server(self, name: str) -> ToolServer | None:
        return self.servers.get(name)

    async def relay(self, name: str, reader: asyncio.StreamReader, send: Send) -> None:
        await _record(self.servers[name], self.real[name], reader, send)


@dataclass(slots=True)
class StdioStandIns:
    """The control listener every stdio stand-in of one flow connects to."""

    relays: StdioRelays
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    """Hex: a token could otherwise start with `-` and read as an option."""
    port: int = 0
    _relays: set[asyncio.Task[None]] = field(default_factory=set)

    def command_line(self, name: str) -> str:
        """What `FLOWPROOF_MCP_SERVER_<NAME>` holds: POSIX-quoted, so shlex.split gives its
        argv back."""
        argv = [*engine_argv(), COMMAND, "--connect", f"{LOOPBACK}:{self.port}"]
        return shlex.join([*argv, "--server", name, "--token", self.token])

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[StdioStandIns]:
        listener = await asyncio.start_server(self._accept, LOOPBACK, 0, limit=LINE_LIMIT)
        self.port = int(listener.sockets[0].getsockname()[1])
        try:
            yield self
        finally:
            listener.close()
            for relay in list(self._relays):
                relay.cancel()
            await asyncio.gather(*self._relays, return_exceptions=True)
            await listener.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            name = await self._introduced(reader)
            server = None if name is None else self.relays.server(name)
            if name is None or server is None:
                return
            server.contacts += 1
            await self.relays.relay(name, reader, _sender(writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._relays.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _introduced(self, reader: asyncio.StreamReader) -> str | None:
        """The server a stand-in names, if it presents this run's token; else None."""
        try:
            hello = json.loads(await asyncio.wait_for(reader.readline(), 10))
        except (TimeoutError, ValueError):
            return None
        if not isinstance(hello, dict):
            return None
        token, name = hello.get("token"), hello.get("server")
        if not isinstance(token, str) or not hmac.compare_digest(token, self.token):
            return None
        return name if isinstance(name, str) else None


def _sender(writer: asyncio.StreamWriter) -> Send:
    lock = asyncio.Lock()

    async def send(message: Message) -> bool:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with lock:
            writer.write(line.encode())
            await writer.drain()
        return True

    return send


async def _lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while line := await reader.readline():
        if line.strip():
            yield line


# Replay ----------------------------------------------------------------------------------------


async def _replay(server: ReplayingServer, reader: asyncio.StreamReader, send: Send) -> None:
    replayer = Replayer(server, send)
    tasks: set[asyncio.Task[None]] = set()

    async def answer(message: Message) -> None:
        await send(await replayer.answer(message))

    async for line in _lines(reader):
        message = parsed(line)
        if isinstance(message, list):
            await send(refuse_batch(server))
        elif message is None:
            continue
        elif is_request(message):
            _spawn(tasks, answer(message))
        elif is_notification(message):
            _spawn(tasks, replayer.emit_due())
        else:
            replayer.answered(message)
    # stdin closed: finish what the agent is still owed, within the stand-in's flush window.
    if tasks:
        await asyncio.wait(set(tasks), timeout=FLUSH_SECONDS)


def _spawn(tasks: set[asyncio.Task[None]], work: Awaitable[None]) -> None:
    async def run() -> None:
        await work

    task = create_task(run(), name="mcp-message")
    tasks.add(task)
    task.add_done_callback(tasks.discard)


# Record ----------------------------------------------------------------------------------------


async def _record(
    server: RecordingServer, real: RealServer, reader: asyncio.StreamReader, send: Send
) -> None:
    spawn = asyncio.create_subprocess_exec(
        *shlex.split(real.command),
        env=dict(real.env),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=LINE_LIMIT,
    )
    async with contextlib.AsyncExitStack() as owned:
        try:
            # Owned: no agent's stop may take it for an orphan of its own.
            process = await owned.enter_async_context(owned_process(spawn))
        except (OSError, ValueError) as exc:
            server.traffic.fail(
                f"{server.lane}: the real MCP server could not be started from "
                f"`{real.command}`: {getattr(exc, 'strerror', None) or exc}"
            )
            return
        try:
            await _RecordRelay(server, process, send).run(reader)
        finally:
            await stop_tree(process.pid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), GRACE_SECONDS)


@dataclass(slots=True)
class _RecordRelay:
    server: RecordingServer
    process: asyncio.subprocess.Process
    send: Send
    calls: dict[str, Message] = field(default_factory=dict)
    """The agent's forwarded requests awaiting the real server's answer, by id."""
    asked: dict[str, Message] = field(default_factory=dict)
    """The real server's requests awaiting the agent's answer, by id."""
    stderr: bytearray = field(default_factory=bytearray)
    stderr_cut: bool = False
    """Whether `stderr` lost its beginning to the STDERR_TAIL bound."""
    agent_done: bool = False

    async def run(self, reader: asyncio.StreamReader) -> None:
        from_server = create_task(self._from_server(), name="mcp-real-server")
        errors = create_task(self._stderr(), name="mcp-real-stderr")
        try:
            await self._from_agent(reader)
            self.agent_done = True
            stdin = self.process.stdin
            assert stdin is not None
            stdin.close()  # as the SDKs do: EOF first, then (below) a signal
            await asyncio.wait({from_server}, timeout=FLUSH_SECONDS)
        finally:
            from_server.cancel()
            errors.cancel()
            await asyncio.gather(from_server, errors, return_exceptions=True)

    async def _from_agent(self, reader: asyncio.StreamReader) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        async for line in _lines(reader):
            message = parsed(line)
            if isinstance(message, list):
                await self.send(refuse_batch(self.server))
                continue
            if message is None:
                continue
            if is_request(message):
                mocked = self.server.answer_here(without_id(message))
                if mocked is not None:
                    await self.send({"jsonrpc": "2.0", "id": message["id"], **mocked})
                    continue
                self.calls[id_key(message)] = without_id(message)
            elif not is_notification(message):  # the agent answering the real server
                request = self.asked.pop(id_key(message), None)
                if request is not None:
                    self.server.server_request(request, without_id(message))
            try:
                stdin.write(line)
                await stdin.drain()
            except ConnectionError:
                return  # the real server exited; _from_server says why

    async def _from_server(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        async for line in _lines(stdout):
            message = parsed(line)
            if not isinstance(message, dict):
                self._stray(line)
                continue
            if is_request(message):
                method = str(message.get("method"))
                if method not in SERVER_REQUESTS:
                    unsupported_server_request(self.server, method)
                    continue
                self.asked[id_key(message)] = without_id(message)
            elif is_notification(message):
                self.server.notice(without_id(message))
            else:
                request = self.calls.pop(id_key(message), None)
                if request is not None:
                    self.server.forwarded(request, without_id(message))
            await self.send(message)
        if not self.agent_done:
            await self._exited_early()

    def _stray(self, line: bytes) -> None:
        shown = line.decode("utf-8", "replace").strip()
        shown = clip(shown, 79) if len(shown) > 80 else shown
        self.server.traffic.fail(
            f"{self.server.lane}: the real MCP server wrote a line to stdout that is not a "
            f"JSON-RPC message ({json.dumps(shown, ensure_ascii=False)}); a stdio server may "
            "write only MCP messages to stdout, so its logging must go to stderr"
        )

    async def _stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self.stderr += chunk
            if len(self.stderr) > STDERR_TAIL:
                del self.stderr[:-STDERR_TAIL]
                self.stderr_cut = True

    async def _exited_early(self) -> None:
        code = await self.process.wait()
        await asyncio.sleep(0.05)  # let the stderr reader take the last of it
        lines = last_lines(bytes(self.stderr).strip(), self.stderr_cut, 15)
        shown = "\n".join(f"  | {line}" for line in lines)
        self.server.traffic.fail(
            f"{self.server.lane}: the real MCP server exited with code {code} while the agent "
            "was still connected"
            + (f"; its stderr ended with:\n{shown}" if shown else " and printed nothing on stderr")
        )

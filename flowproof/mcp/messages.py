"""JSON-RPC messages as both transports carry them, and what both do at replay before an answer:
re-emit what the real server sent unprompted at that point of the recording."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from flowproof.mcp.lane import Notice, ServerRequest, describe, without_id
from flowproof.mcp.server import DIVERGED, ReplayingServer, ToolServer

Message = dict[str, Any]
Send = Callable[[Message], Awaitable[bool]]
"""Push a message to the agent; False when it cannot be delivered (no GET stream is open)."""

SERVER_ANSWER_SECONDS = 10.0
"""How long a replayed server request waits for the agent's answer."""
NOTICE_GAP_SECONDS = 0.02
SERVER_REQUESTS = ("sampling/createMessage", "elicitation/create", "roots/list", "ping")
"""Requests a real server may send the agent mid-record; any other fails the record by name."""
BATCH = "flowproof: JSON-RPC batches are not part of MCP since 2025-06-18; send one message"


def parsed(raw: bytes | str) -> Message | list[Any] | None:
    """A message (or a batch, which callers refuse); None for anything that is not JSON-RPC."""
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    return message if isinstance(message, dict | list) else None


def is_request(message: Message) -> bool:
    return "method" in message and "id" in message


def is_notification(message: Message) -> bool:
    return "method" in message and "id" not in message


def id_key(message: Message) -> str:
    """An id as a dict key: 1 and "1" are different ids in JSON-RPC."""
    return json.dumps(message.get("id"))


def error(message_id: Any, text: str) -> Message:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": DIVERGED, "message": text}}


def refuse_batch(server: ToolServer) -> Message:
    """A batch fails the flow (half-serving one would corrupt the lane); the agent is told why."""
    server.traffic.fail(f"{server.lane}: the agent sent a JSON-RPC batch, which MCP no longer has")
    return error(None, BATCH)


def unsupported_server_request(server: ToolServer, method: str) -> None:
    server.traffic.fail(
        f"{server.lane}: the real MCP server sent a server-initiated request ({method}) that "
        f"flowproof cannot record yet; supported: {', '.join(SERVER_REQUESTS)}"
    )


@dataclass(slots=True)
class Replayer:
    """At replay, for one connection: what the server sent unprompted, sent again when due,
    and the agent's answers to re-sent server requests checked against the recording."""

    server: ReplayingServer
    send: Send
    waiting: dict[str, asyncio.Future[Message]] = field(default_factory=dict)
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def emit_due(self) -> None:
        due = self.server.due()
        for entry in due:
            if isinstance(entry, Notice):
                await self.send({"jsonrpc": "2.0", **entry.message})
            else:
                await self._ask_agent(entry)
        if due:
            # The npm SDK (1.32) drops a progress notification that arrives in the same read
            # as its call's answer; a moment between them keeps replays alike.
            await asyncio.sleep(NOTICE_GAP_SECONDS)

    async def answer(self, message: Message) -> Message:
        """The answer to one of the agent's requests, after what was due before it."""
        await self.emit_due()
        found = self.server.answer(without_id(message))
        return {"jsonrpc": "2.0", "id": message.get("id"), **found}

    def answered(self, message: Message) -> bool:
        """The agent's answer to a re-sent server request; False if it answers nothing."""
        future = self.waiting.pop(id_key(message), None)
        if future is None or future.done():
            return False
        future.set_result(message)
        return True

    async def _ask_agent(self, recorded: ServerRequest) -> None:
        request_id = f"flowproof-{next(self._numbers)}"
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self.waiting[json.dumps(request_id)] = future
        what = describe(recorded.request)
        if not await self.send({"jsonrpc": "2.0", "id": request_id, **recorded.request}):
            self.server.traffic.fail(
                f"{self.server.lane}: the server's {what} (recorded) could not be sent: the "
                "agent has no GET stream open to receive it"
            )
            return
        try:
            reply = await asyncio.wait_for(future, SERVER_ANSWER_SECONDS)
        except TimeoutError:
            self.server.traffic.fail(
                f"{self.server.lane}: the agent did not answer the server's {what} within "
                f"{SERVER_ANSWER_SECONDS:g}s (it answered it at record)"
            )
            return
        self.server.check_server_answer(recorded, without_id(reply))

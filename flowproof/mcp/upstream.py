"""The real streamable-HTTP MCP server, at record only: the one MCP module with a network client.

The URL is the spec's `url:`, fixed when the flow starts. A POST's answer is read as one
`application/json` message or as the `text/event-stream` frames the server sends before it
(notifications, server requests), each handed over as it arrives: a server that asks the agent
something mid-call waits for the answer before it finishes the stream. Replay never imports
this module (its listener answers from the lane).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from flowproof.guards.spellings import clip
from flowproof.outbound.proxy_failure import proxy_failure
from flowproof.outbound.reach import Reach
from flowproof.outbound.route import ProxyRoutes
from flowproof.outbound.trust import untrusted_certificate

FORWARDED = (
    "Authorization",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Accept",
    "Content-Type",
    "Last-Event-ID",
)
"""Headers passed from the agent to the real server (none of them is ever stored)."""
RETURNED = ("Mcp-Session-Id",)
"""Headers passed from the real server back to the agent."""

OnMessage = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class UpstreamAnswer:
    status: int
    headers: dict[str, str]
    text: str
    """The body when it held no JSON-RPC message (an HTTP error page), cut short."""


class Unreachable(Exception):
    """The real server could not be reached, or broke off its answer."""

    def __init__(self, url: str, cause: BaseException, routes: ProxyRoutes) -> None:
        untrusted = untrusted_certificate(cause)
        if untrusted is not None:
            super().__init__(f"the real MCP server at {url}: {untrusted}")
            return
        through = proxy_failure(url, cause, routes)
        super().__init__(
            f"the real MCP server at {url} could not be reached: {through}"
            if through
            else f"the real MCP server at {url} could not be reached "
            f"({cause or type(cause).__name__})"
        )


class HttpUpstream:
    def __init__(self, url: str, reach: Reach) -> None:
        """`reach`: how the flow's record reaches the outside, read as it started."""
        self.url = url
        self._routes = reach.routes
        self._session = reach.open_session(aiohttp.ClientTimeout(total=None, sock_connect=30))
        self._proxy = reach.proxy_for(url)

    async def close(self) -> None:
        await self._session.close()

    async def post(
        self, body: bytes, headers: Mapping[str, str], on_message: OnMessage
    ) -> UpstreamAnswer:
        try:
            async with self._session.post(
                self.url, data=body, headers=_forwarded(headers), proxy=self._proxy
            ) as reply:
                return await self._read(reply, on_message)
        except (aiohttp.ClientError, OSError) as exc:
            raise Unreachable(self.url, exc, self._routes) from None

    async def get(self, headers: Mapping[str, str], on_message: OnMessage) -> UpstreamAnswer:
        """The server-push stream: each message handed over until the server ends it."""
        try:
            async with self._session.get(
                self.url, headers=_forwarded(headers), proxy=self._proxy
            ) as reply:
                return await self._read(reply, on_message)
        except (aiohttp.ClientError, OSError) as exc:
            raise Unreachable(self.url, exc, self._routes) from None

    async def delete(self, headers: Mapping[str, str]) -> UpstreamAnswer:
        try:
            async with self._session.delete(
                self.url, headers=_forwarded(headers), proxy=self._proxy
            ) as reply:
                return UpstreamAnswer(reply.status, _returned(reply), "")
        except (aiohttp.ClientError, OSError) as exc:
            raise Unreachable(self.url, exc, self._routes) from None

    async def _read(self, reply: aiohttp.ClientResponse, on_message: OnMessage) -> UpstreamAnswer:
        kind = reply.headers.get("Content-Type", "")
        if "text/event-stream" in kind:
            async for data in _sse_data(reply.content):
                message = _message(data)
                if message is not None:
                    await on_message(message)
            return UpstreamAnswer(reply.status, _returned(reply), "")
        text = await reply.text(errors="replace")
        message = _message(text) if "json" in kind else None
        if message is not None:
            await on_message(message)
            return UpstreamAnswer(reply.status, _returned(reply), "")
        return UpstreamAnswer(reply.status, _returned(reply), clip(text, 300))


async def _sse_data(stream: aiohttp.StreamReader) -> AsyncIterator[str]:
    """The `data:` of each message event, joined across lines, as events complete.

    Only events of the default type (`message`, or no `event:` line) carry JSON-RPC messages.
    Servers and the gateways in front of them keep a quiet stream open with comments
    (`: keep-alive`) and events of their own (`event: ping`); neither is the server speaking,
    so neither is passed on or stored."""
    lines: list[str] = []
    kind = ""
    async for raw in stream:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if lines and kind in ("", "message"):
                yield "\n".join(lines)
            lines, kind = [], ""
        elif line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            kind = line[6:].strip()
    if lines and kind in ("", "message"):
        yield "\n".join(lines)


def _message(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return None  # the priming event of 2025-11-25: an id, and empty data
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _forwarded(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: headers[name] for name in FORWARDED if name in headers}


def _returned(reply: aiohttp.ClientResponse) -> dict[str, str]:
    return {name: reply.headers[name] for name in RETURNED if name in reply.headers}

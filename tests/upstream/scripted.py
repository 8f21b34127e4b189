"""A scripted OpenAI-compatible model server the tests start on loopback.

It plays a model whose decisions are written in advance: the n-th chat-completion request gets
the n-th scripted reply. It keeps every request it received, headers included, so tests can
check what flowproof forwarded (the key in Authorization, and nothing else).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


def tool_call(
    name: str, arguments: dict[str, Any] | str, call_id: str | None = None
) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id or f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": raw},
    }


def calls(*tool_calls: dict[str, Any]) -> dict[str, Any]:
    """A scripted reply that asks for these tool calls."""
    return {"tool_calls": list(tool_calls)}


def text(content: str) -> dict[str, Any]:
    """A scripted reply that answers in text."""
    return {"content": content}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ScriptedUpstream:
    script: list[Any] = field(default_factory=list)
    fail_status: int | None = None
    fail_body: str = '{"error": {"message": "scripted upstream failure", "type": "server_error"}}'
    received: list[Received] = field(default_factory=list)
    port: int = 0
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.received.append(Received(request.path, dict(request.headers), body))
        if self.fail_status is not None:
            return web.Response(
                status=self.fail_status, text=self.fail_body, content_type="application/json"
            )
        index = len(self.received) - 1
        step = self.script[index] if index < len(self.script) else text("(script exhausted)")
        if callable(step):  # a model that decides from the request, not from its position
            step = step(body)
        message = {"role": "assistant", "content": step.get("content"), "refusal": None}
        if step.get("tool_calls"):
            message["tool_calls"] = step["tool_calls"]
        reply = {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": 1795976105,
            "model": body.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if step.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "system_fingerprint": None,
        }
        return web.json_response(reply)

    def start(self) -> None:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def boot() -> None:
            app = web.Application()
            app.router.add_post("/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = self._runner.addresses[0][1]
            ready.set()

        def serve() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(boot())
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=serve, name="scripted-upstream", daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

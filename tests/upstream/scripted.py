"""A scripted model server, speaking every dialect, that the tests start on loopback.

It plays a model whose decisions are written in advance: the n-th request gets the n-th
scripted step (or, for a callable step, whatever it decides from the request body). A step is
dialect-neutral (`calls(...)` or `text(...)`); it is rendered as a chat completion (OpenAI and
Azure), a Responses object, an Anthropic message, a Gemini GenerateContentResponse or an
Ollama chat response by the path the request came in on. Every request is kept, headers
included, so tests can check what flowproof forwarded.

Like the real services it is strict where flowproof could get a provider wrong: Gemini's
generateContent takes the model in the path and answers 400 to a body that carries one, and
Ollama streams NDJSON unless the body says `"stream": false`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.loopback import ThreadedApp

Step = dict[str, Any]


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"call_{name}", "name": name, "arguments": raw}


def calls(*tool_calls: dict[str, Any]) -> Step:
    """A scripted reply that asks for these tool calls."""
    return {"tool_calls": list(tool_calls)}


def text(content: str) -> Step:
    """A scripted reply that answers in text."""
    return {"content": content}


def render_chat(step: Step, body: dict, serial: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": step.get("content"), "refusal": None}
    if step.get("tool_calls"):
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in step["tool_calls"]
        ]
    return {
        "id": f"chatcmpl-scripted-{serial}",
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


def render_responses(step: Step, body: dict, serial: int) -> dict:
    output: list[dict[str, Any]] = []
    for c in step.get("tool_calls") or []:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{c['id']}",
                "call_id": c["id"],
                "name": c["name"],
                "arguments": c["arguments"],
                "status": "completed",
            }
        )
    if step.get("content") is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_scripted_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": step["content"], "annotations": []}],
            }
        )
    return {
        "id": f"resp_scripted_{serial}",
        "object": "response",
        "created_at": 1795976105,
        "status": "completed",
        "model": body.get("model", "scripted"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools", []),
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }


def render_anthropic(step: Step, body: dict, serial: int) -> dict:
    content: list[dict[str, Any]] = []
    if step.get("content") is not None:
        content.append({"type": "text", "text": step["content"]})
    for c in step.get("tool_calls") or []:
        content.append(
            {
                "type": "tool_use",
                "id": c["id"],
                "name": c["name"],
                "input": json.loads(c["arguments"]),
            }
        )
    return {
        "id": f"msg_scripted_{serial}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": content,
        "stop_reason": "tool_use" if step.get("tool_calls") else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def render_gemini(step: Step, body: dict, serial: int) -> dict:
    parts: list[dict[str, Any]] = []
    if step.get("content") is not None:
        parts.append({"text": step["content"]})
    for c in step.get("tool_calls") or []:  # Gemini calls carry no id
        parts.append({"functionCall": {"name": c["name"], "args": json.loads(c["arguments"])}})
    return {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "totalTokenCount": 15,
        },
        "modelVersion": "gemini-scripted-001",
        "responseId": f"scripted-{serial}",
    }


def render_ollama(step: Step, body: dict, serial: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": step.get("content") or ""}
    if step.get("tool_calls"):
        message["tool_calls"] = [
            {"function": {"name": c["name"], "arguments": json.loads(c["arguments"])}}
            for c in step["tool_calls"]
        ]
    return {
        "model": body.get("model", "scripted"),
        "created_at": f"2026-12-01T00:00:{serial:02d}Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "load_duration": 10,
        "prompt_eval_count": 10,
        "prompt_eval_duration": 100,
        "eval_count": 5,
        "eval_duration": 100,
    }


RENDERERS = (
    ("/chat/completions", render_chat),
    ("/responses", render_responses),
    ("/messages", render_anthropic),
    (":generateContent", render_gemini),
    ("/api/chat", render_ollama),
)


def refusal(path: str, body: Any) -> web.Response | None:
    """What the real service would refuse, or stream, where flowproof must ask for one
    complete answer."""
    if ":generateContent" in path and isinstance(body, dict) and "model" in body:
        error = {"code": 400, "message": 'Invalid JSON payload received. Unknown name "model"'}
        return web.json_response({"error": error}, status=400)
    if "/api/chat" in path and isinstance(body, dict) and body.get("stream", True) is not False:
        chunk = {"model": body.get("model"), "message": {"role": "assistant", "content": "x"}}
        lines = json.dumps({**chunk, "done": False}) + "\n" + json.dumps({**chunk, "done": True})
        return web.Response(text=lines + "\n", content_type="application/x-ndjson")
    return None


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""
    """The query string as it arrived (`beta=true`), '' when there was none."""
    method: str = "POST"


@dataclass
class ScriptedUpstream:
    script: list[Any] = field(default_factory=list)
    fail_status: int | None = None
    fail_body: str = '{"error": {"message": "scripted upstream failure", "type": "server_error"}}'
    delay: float = 0.0
    """Seconds to wait before answering, so concurrent requests really overlap."""
    received: list[Received] = field(default_factory=list)
    port: int = 0
    ssl_context: ssl.SSLContext | None = None
    """Serve HTTPS with this context's certificate (tests/e2e/test_upstream_tls.py)."""
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def base_url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.received.append(
            Received(
                request.path, dict(request.headers), body, request.query_string, request.method
            )
        )
        index = len(self.received) - 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_status is not None:
            return web.Response(
                status=self.fail_status, text=self.fail_body, content_type="application/json"
            )
        refused = refusal(request.path, body)
        if refused is not None:
            return refused
        step = self.script[index] if index < len(self.script) else text("(script exhausted)")
        if callable(step):  # a model that decides from the request, not from its position
            step = step(body)
        render = next(r for marker, r in RENDERERS if marker in request.path)
        return web.json_response(render(step, body, next(self._ids)))

    def start(self) -> None:
        self._server = ThreadedApp(
            "scripted-upstream",
            lambda app: app.router.add_post("/{tail:.*}", self._handle),
            self.ssl_context,
        )
        self.port = self._server.start()

    def stop(self) -> None:
        self._server.stop()

"""Ollama's native chat API (`…/api/chat`); its OpenAI-compatible `/v1/chat/completions` is
`openai_chat`.

Three things set it apart:

- It STREAMS unless the body says `"stream": false` (absent means true), and a stream is
  NDJSON: one JSON object per line, the last with `"done": true`, no SSE framing. Record
  always sends `"stream": false`, so the trace keeps one whole answer.
- Tool calls are `message.tool_calls[].function` with `arguments` an OBJECT; a tool result is
  a `tool` message whose `content` is text.
- There are no call ids: a `tool` message answers the call of its `tool_name`, in order (the
  k-th result named `search` answers the k-th call named `search`); one without a
  `tool_name` answers the first unanswered call of the assistant message before it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from flowproof.dialects.anthropic import canonical_input
from flowproof.dialects.base import (
    CallMade,
    Dialect,
    Envelope,
    ModelTurn,
    ResultSlot,
    ToolEvent,
    join_text,
    offered_tools,
    without_transport,
)

_MESSAGE_FIELDS = ("content", "thinking", "tool_calls", "images")
"""The message fields a streamed line carries; the final line's message is empty."""


class OllamaChat(Dialect):
    name = "ollama_chat"
    path_marker = "/api/chat"
    upstream_path = "/api/chat"
    upstream_from_origin = True
    upstream_variable = "OLLAMA_HOST"
    default_upstream = "http://127.0.0.1:11434"
    key_variables = ("FLOWPROOF_AGENT_KEY", "OLLAMA_API_KEY")
    """A local Ollama needs no key; ollama.com takes one as Bearer (the default header)."""
    stream_content_type = "application/x-ndjson"

    def wants_stream(self, request: Any) -> bool:
        return isinstance(request, dict) and request.get("stream") is not False

    def upstream_body(self, request: Any) -> Any:
        body = without_transport(request)
        return {**body, "stream": False} if isinstance(body, dict) else body

    # -- facts read from bodies -------------------------------------------------------------
    def tool_calls(self, response: Any) -> list[tuple[str, str]]:
        return [(name, _raw(arguments)) for name, arguments in _calls(_message(response))]

    def reply_text(self, response: Any) -> str | None:
        message = _message(response)
        if _calls(message):
            return None
        return join_text(message.get("content"))

    def system_prompt(self, request: Any) -> str:
        for message in _messages(request):
            if message.get("role") == "system":
                return join_text(message.get("content"))
        return ""

    def tool_exchange(self, request: Any) -> Iterator[ToolEvent]:
        """Assistant messages carry `tool_calls`; each result is a `tool` message, tied to
        its call by name and order (the ids are `<name>#<k>`, k counting from 0)."""
        calls: dict[str, int] = {}
        results: dict[str, int] = {}
        unanswered: list[str] = []
        for message in _messages(request):
            role = message.get("role")
            if role == "assistant":
                yield ModelTurn()
                unanswered = []
                for tool, _ in _calls(message):
                    yield CallMade(f"{tool}#{calls.get(tool, 0)}", tool)
                    calls[tool] = calls.get(tool, 0) + 1
                    unanswered.append(tool)
            elif role == "tool":
                named = message.get("tool_name") or message.get("name")
                tool = str(named) if named else (unanswered[0] if unanswered else "")
                if tool in unanswered:
                    unanswered.remove(tool)
                yield ResultSlot(f"{tool}#{results.get(tool, 0)}", message, "content")
                results[tool] = results.get(tool, 0) + 1

    def envelope(self, request: Any) -> Envelope:
        body = request if isinstance(request, dict) else {}
        roles = tuple(str(message.get("role")) for message in _messages(request))
        return Envelope(model=body.get("model"), tools=offered_tools(body), roles=roles)

    # -- rendering --------------------------------------------------------------------------
    def render_stream(self, request: Any, response: Any) -> Sequence[bytes]:
        """The recorded answer as Ollama streams it: a line with the message (not done), then
        the closing line with the recorded stats, an empty message and `"done": true`."""
        body = response if isinstance(response, dict) else {}
        message = _message(body)
        head = {key: body[key] for key in ("model", "created_at") if key in body}
        lines = []
        if any(message.get(field) for field in _MESSAGE_FIELDS):
            lines.append({**head, "message": message, "done": False})
        closing = {"role": message.get("role", "assistant"), "content": ""}
        lines.append({**body, "message": closing, "done": True})
        return [(json.dumps(line, ensure_ascii=False) + "\n").encode() for line in lines]

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {"error": message}

    def text_response(self, request: Any, text: str) -> Any:
        model = request.get("model") if isinstance(request, dict) else None
        return {
            "model": model or "flowproof-doctor",
            "created_at": "1970-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": "stop",
        }

    def tool_call_response(self, request: Any, tool: str, call_id: str) -> Any:
        response = self.text_response(request, "")
        call = {"function": {"name": tool, "arguments": {}}}
        response["message"] = {"role": "assistant", "content": "", "tool_calls": [call]}
        return response


def _raw(arguments: Any) -> str:
    """The raw argument string: an object in its canonical form, a string as it is."""
    return arguments if isinstance(arguments, str) else canonical_input(arguments)


def _calls(message: dict[str, Any]) -> list[tuple[str, Any]]:
    """(name, arguments) of a message's tool calls."""
    found: list[tuple[str, Any]] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            found.append((str(function.get("name", "")), function.get("arguments", {})))
    return found


def _messages(request: Any) -> list[dict[str, Any]]:
    messages = request.get("messages") if isinstance(request, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _message(response: Any) -> dict[str, Any]:
    message = response.get("message") if isinstance(response, dict) else None
    return message if isinstance(message, dict) else {}

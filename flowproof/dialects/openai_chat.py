"""OpenAI Chat Completions (`…/chat/completions`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from flowproof.dialects.base import (
    CallMade,
    Dialect,
    Envelope,
    ModelTurn,
    ResultSlot,
    ToolEvent,
    join_text,
    offered_tools,
    sse_frame,
)


class OpenAIChat(Dialect):
    name = "openai_chat"
    path_marker = "/chat/completions"
    upstream_path = "/chat/completions"

    def tool_calls(self, response: Any) -> list[tuple[str, str]]:
        calls = []
        for call in _message(response).get("tool_calls") or []:
            function = call.get("function") or {}
            calls.append((str(function.get("name", "")), str(function.get("arguments", ""))))
        return calls

    def reply_text(self, response: Any) -> str | None:
        message = _message(response)
        if message.get("tool_calls"):
            return None
        return join_text(message.get("content"))

    def system_prompt(self, request: Any) -> str:
        for message in _messages(request):
            if message.get("role") in ("system", "developer"):
                return join_text(message.get("content"))
        return ""

    def tool_exchange(self, request: Any) -> Iterator[ToolEvent]:
        """Assistant messages carry `tool_calls`; each result is a `tool` message."""
        for message in _messages(request):
            if message.get("role") == "assistant":
                yield ModelTurn()
                for call in message.get("tool_calls") or []:
                    if isinstance(call, dict):
                        name = str((call.get("function") or {}).get("name", ""))
                        yield CallMade(str(call.get("id")), name)
            elif message.get("role") == "tool":
                yield ResultSlot(str(message.get("tool_call_id")), message, "content")

    def envelope(self, request: Any) -> Envelope:
        body = request if isinstance(request, dict) else {}
        tools = offered_tools(body)
        roles = tuple(str(message.get("role")) for message in _messages(request))
        return Envelope(model=body.get("model"), tools=tools, roles=roles)

    def render_stream(self, request: Any, response: Any) -> Sequence[bytes]:
        options = request.get("stream_options") if isinstance(request, dict) else None
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        base = {key: response.get(key) for key in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"
        base["system_fingerprint"] = response.get("system_fingerprint")

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            body = {**base, "choices": choices, **extra}
            if include_usage and "usage" not in extra:
                body["usage"] = None
            return sse_frame(body)

        frames = []
        for choice in response.get("choices") or []:
            index = choice.get("index", 0)
            message = choice.get("message") or {}

            def delta(d: dict[str, Any], finish: Any = None, index: int = index) -> dict[str, Any]:
                return {"index": index, "delta": d, "logprobs": None, "finish_reason": finish}

            # Like the real API: "" opens a text answer, null opens a tool-call answer, so a
            # client that assembles the stream rebuilds exactly the recorded message.
            opening = "" if isinstance(message.get("content"), str) else None
            frames.append(chunk([delta({"role": "assistant", "content": opening})]))
            if message.get("content"):
                frames.append(chunk([delta({"content": message["content"]})]))
            for position, call in enumerate(message.get("tool_calls") or []):
                function = call.get("function") or {}
                head = {
                    "index": position,
                    "id": call.get("id"),
                    "type": call.get("type", "function"),
                    "function": {"name": function.get("name"), "arguments": ""},
                }
                frames.append(chunk([delta({"tool_calls": [head]})]))
                frames.append(
                    chunk(
                        [
                            delta(
                                {
                                    "tool_calls": [
                                        {
                                            "index": position,
                                            "function": {
                                                "arguments": function.get("arguments", "")
                                            },
                                        }
                                    ]
                                }
                            )
                        ]
                    )
                )
            frames.append(chunk([delta({}, choice.get("finish_reason"))]))
        if include_usage:
            frames.append(chunk([], usage=response.get("usage")))
        frames.append(sse_frame("[DONE]"))
        return frames

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def text_response(self, request: Any, text: str) -> Any:
        model = request.get("model") if isinstance(request, dict) else None
        return {
            "id": "chatcmpl-flowproof-doctor",
            "object": "chat.completion",
            "created": 0,
            "model": model or "flowproof-doctor",
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "logprobs": None,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def tool_call_response(self, request: Any, tool: str, call_id: str) -> Any:
        response = self.text_response(request, "")
        choice = response["choices"][0]
        choice["finish_reason"] = "tool_calls"
        call = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": "{}"}}
        choice["message"].update(content=None, tool_calls=[call])
        return response


def _messages(request: Any) -> list[dict[str, Any]]:
    messages = request.get("messages") if isinstance(request, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _message(response: Any) -> dict[str, Any]:
    choices = response.get("choices") if isinstance(response, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return message if isinstance(message, dict) else {}
    return {}

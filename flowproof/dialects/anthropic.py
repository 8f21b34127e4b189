"""Anthropic Messages (`…/messages`).

Three things set this API apart from chat completions:

- A tool call's `input` is a JSON object, not a string. flowproof still hands the assertions a
  raw argument string, made by one canonical serialisation (`canonical_input`), so the same
  arguments read the same in every dialect. The trace stores the object as it arrived; only
  the facts derived from it are serialised.
- Tool results travel back as `tool_result` blocks inside a `user` message, tied to the call by
  `tool_use_id`.
- A streaming client drops every SSE event that has no `event:` line (anthropic-python
  `_streaming.py`, the npm SDK likewise), so every frame names its event.
"""

from __future__ import annotations

import json
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

_TEXT_BLOCKS = ("text", "thinking")
"""Blocks whose same-named field starts empty and streams as `<field>_delta` pieces."""
_JSON_INPUT_BLOCKS = ("tool_use", "server_tool_use")
"""Blocks whose `input` streams as `input_json_delta` pieces."""
_TEXT_PARTS = ("text",)
"""The blocks whose `text` is a message's text (thinking is not the answer)."""
_STOP_FIELDS = ("stop_reason", "stop_sequence", "stop_details", "container")
"""Message fields that are null in message_start and arrive in message_delta. The SDK
overwrites the first three from message_delta, so each must come back there."""


def canonical_input(value: Any) -> str:
    """The raw argument string for a tool_use `input` object.

    `json.dumps` with its default separators (`", "`, `": "`) and `ensure_ascii=False`, keys in
    the order they arrived. That is byte-for-byte what Python's `json.dumps` gives for the
    same object, which is how the openai SDK's users and the scripted test model write
    chat-completion arguments, so an assertion message quotes the same text for either API.
    It is derived, never matched: matching compares the parsed bodies.
    """
    return json.dumps(value, ensure_ascii=False)


class AnthropicMessages(Dialect):
    name = "anthropic_messages"
    path_marker = "/messages"
    upstream_path = "/messages"
    upstream_variable = "ANTHROPIC_BASE_URL"
    upstream_variable_adds_v1 = True
    default_upstream = "https://api.anthropic.com/v1"
    # The response shape depends on both, so they reach the upstream exactly as the agent sent
    # them: anthropic-python 2.14 sends anthropic-version 2026-10-21, litellm 2023-06-01.
    passthrough_headers = ("anthropic-version", "anthropic-beta")

    def auth_headers(self, key: str) -> dict[str, str]:
        """Anthropic takes the bare key in `x-api-key`; a `Bearer ` prefix is dropped."""
        if key[:7].lower() == "bearer ":
            key = key[7:].strip()
        return {"x-api-key": key}

    # -- facts read from bodies -------------------------------------------------------------
    def tool_calls(self, response: Any) -> list[tuple[str, str]]:
        return [
            (str(block.get("name", "")), canonical_input(block.get("input", {})))
            for block in _blocks(response)
            if block.get("type") == "tool_use"
        ]

    def reply_text(self, response: Any) -> str | None:
        blocks = _blocks(response)
        if any(block.get("type") == "tool_use" for block in blocks):
            return None
        return join_text(blocks, _TEXT_PARTS)

    def system_prompt(self, request: Any) -> str:
        system = request.get("system") if isinstance(request, dict) else None
        return join_text(system, _TEXT_PARTS)

    def tool_exchange(self, request: Any) -> Iterator[ToolEvent]:
        """`tool_use` blocks of assistant messages are the calls; each result is a
        `tool_result` block of a user message, its content a string or text blocks."""
        for message in _messages(request):
            role = message.get("role")
            if role == "assistant":
                yield ModelTurn()
            for block in _blocks(message):
                if role == "assistant" and block.get("type") == "tool_use":
                    yield CallMade(str(block.get("id")), str(block.get("name", "")))
                elif role == "user" and block.get("type") == "tool_result":
                    yield ResultSlot(str(block.get("tool_use_id")), block, "content", _TEXT_PARTS)

    def envelope(self, request: Any) -> Envelope:
        body = request if isinstance(request, dict) else {}
        tools = offered_tools(body)
        return Envelope(
            model=body.get("model"),
            tools=tools,
            roles=tuple(_role(message) for message in _messages(request)),
        )

    # -- rendering --------------------------------------------------------------------------
    def render_stream(self, request: Any, response: Any) -> Sequence[bytes]:
        """The recorded message as the event sequence the API streams: message_start (no
        content, no stop reason), then per block start / delta / stop, then message_delta and
        message_stop. An SDK that assembles it rebuilds exactly the recorded message."""
        body = response if isinstance(response, dict) else {}
        recorded_usage = body.get("usage")
        usage: dict[str, Any] = recorded_usage if isinstance(recorded_usage, dict) else {}
        stopped = [f for f in _STOP_FIELDS if f in body or f in ("stop_reason", "stop_sequence")]
        message = {**body, "content": [], **dict.fromkeys(stopped)}
        frames = [_event("message_start", message=message)]
        for index, block in enumerate(_blocks(response)):
            frames.extend(_block_events(index, block))
        delta = {field: body.get(field) for field in stopped}
        output_tokens = usage.get("output_tokens", 0)
        frames.append(_event("message_delta", delta=delta, usage={"output_tokens": output_tokens}))
        frames.append(_event("message_stop"))
        return frames

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}

    def text_response(self, request: Any, text: str) -> Any:
        model = request.get("model") if isinstance(request, dict) else None
        return {
            "id": "msg_flowproof_doctor",
            "type": "message",
            "role": "assistant",
            "model": model or "flowproof-doctor",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }

    def tool_call_response(self, request: Any, tool: str, call_id: str) -> Any:
        response = self.text_response(request, "")
        response["content"] = [{"type": "tool_use", "id": call_id, "name": tool, "input": {}}]
        response["stop_reason"] = "tool_use"
        return response


def _block_events(index: int, block: dict[str, Any]) -> list[bytes]:
    kind = block.get("type")
    start, deltas = dict(block), []
    if kind in _TEXT_BLOCKS:
        start[kind] = ""
        deltas.append({"type": f"{kind}_delta", kind: block.get(kind, "")})
        if kind == "thinking" and "signature" in block:
            start["signature"] = ""
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in _JSON_INPUT_BLOCKS:
        # The input starts as {} and is the concatenation of the partial_json pieces.
        start["input"] = {}
        deltas.append(
            {"type": "input_json_delta", "partial_json": canonical_input(block.get("input", {}))}
        )
    # Any other block (redacted_thinking, server tool results) arrives whole in its start.
    return [
        _event("content_block_start", index=index, content_block=start),
        *(_event("content_block_delta", index=index, delta=delta) for delta in deltas),
        _event("content_block_stop", index=index),
    ]


def _event(kind: str, **fields: Any) -> bytes:
    return sse_frame({"type": kind, **fields}, event=kind)


def _role(message: dict[str, Any]) -> str:
    """The role, with its non-text block types: `user(tool_result)`, `assistant(text+tool_use)`.

    A tool turn and a typed question are both `user` on the wire; naming the blocks lets the
    envelope line of a divergence show which one moved."""
    role = str(message.get("role"))
    content = message.get("content")
    if not isinstance(content, list):
        return role
    kinds = list(dict.fromkeys(str(b.get("type")) for b in content if isinstance(b, dict)))
    return f"{role}({'+'.join(kinds)})" if kinds and kinds != ["text"] else role


def _messages(request: Any) -> list[dict[str, Any]]:
    messages = request.get("messages") if isinstance(request, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _blocks(message: Any) -> list[dict[str, Any]]:
    """The content blocks of a response or a message; none when the content is a string."""
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []

"""OpenAI Responses (`…/responses`).

The default API of openai-agents, pydantic-ai's `openai:` models, the AI SDK's `openai()` and
`llm`. A request carries the whole conversation as `input` items (messages, echoed
`function_call` items and `function_call_output` items); a response is a list of `output`
items. The streamed form is a typed event sequence ending in a terminal event that carries the
whole response, which is what clients such as openai-agents keep as the turn's result.
"""

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

TERMINAL_EVENTS = {"incomplete": "response.incomplete", "failed": "response.failed"}
"""The stream's last event by the recorded status; anything else ends in response.completed."""


class OpenAIResponses(Dialect):
    name = "openai_responses"
    path_marker = "/responses"
    upstream_path = "/responses"

    def tool_calls(self, response: Any) -> list[tuple[str, str]]:
        return [
            (str(item.get("name", "")), str(item.get("arguments", "")))
            for item in _items(response, "output")
            if item.get("type") == "function_call"
        ]

    def reply_text(self, response: Any) -> str | None:
        output = _items(response, "output")
        if any(item.get("type") == "function_call" for item in output):
            return None
        return "".join(
            join_text(item.get("content"), ("output_text",))
            for item in output
            if item.get("type") == "message"
        )

    def system_prompt(self, request: Any) -> str:
        instructions = request.get("instructions") if isinstance(request, dict) else None
        if isinstance(instructions, str):
            return instructions
        for item in _items(request, "input"):
            if item.get("role") in ("system", "developer"):
                return join_text(item.get("content"), ("input_text",))
        return ""

    def envelope(self, request: Any) -> Envelope:
        body = request if isinstance(request, dict) else {}
        tools = offered_tools(body)
        if isinstance(body.get("input"), str):
            roles: tuple[str, ...] = ("user",)
        else:
            roles = tuple(
                str(item.get("role") or item.get("type") or "?")
                for item in _items(request, "input")
            )
        return Envelope(model=body.get("model"), tools=tools, roles=roles)

    def tool_exchange(self, request: Any) -> Iterator[ToolEvent]:
        """Echoed `function_call` items are the calls, each `function_call_output` item a
        result (its output a string or input_text parts). A model turn begins at a function
        call or an assistant message item."""
        for item in _items(request, "input"):
            if item.get("type") == "function_call" or item.get("role") == "assistant":
                yield ModelTurn()
                if item.get("type") == "function_call":
                    yield CallMade(str(item.get("call_id")), str(item.get("name", "")))
            elif item.get("type") == "function_call_output":
                yield ResultSlot(str(item.get("call_id")), item, "output", ("input_text",))

    def render_stream(self, request: Any, response: Any) -> Sequence[bytes]:
        events = _StreamEvents()
        response = response if isinstance(response, dict) else {}
        opening = {**response, "status": "in_progress", "output": []}
        if "usage" in opening:
            opening["usage"] = None  # the real API reports usage only on the terminal event
        events.add("response.created", response=opening)
        events.add("response.in_progress", response=opening)
        for index, item in enumerate(_items(response, "output")):
            if item.get("type") == "function_call":
                _function_call_events(events, index, item)
            elif item.get("type") == "message":
                _message_events(events, index, item)
            else:
                # Reasoning and built-in tool items: clients keep the finished item (and the
                # terminal event's copy), so an added/done pair without deltas rebuilds it.
                events.add("response.output_item.added", output_index=index, item=item)
                events.add("response.output_item.done", output_index=index, item=item)
        terminal = TERMINAL_EVENTS.get(str(response.get("status")), "response.completed")
        events.add(terminal, response=response)
        return events.frames

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def text_response(self, request: Any, text: str) -> Any:
        model = request.get("model") if isinstance(request, dict) else None
        message = {
            "type": "message",
            "id": "msg_flowproof_doctor",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return {
            "id": "resp_flowproof_doctor",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": model or "flowproof-doctor",
            "output": [message],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 0,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 0,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 0,
            },
        }

    def tool_call_response(self, request: Any, tool: str, call_id: str) -> Any:
        response = self.text_response(request, "")
        call = {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": call_id,
            "name": tool,
            "arguments": "{}",
            "status": "completed",
        }
        response["output"] = [call]
        return response


class _StreamEvents:
    """Frames with `event:` lines (as the real API sends) and a sequence_number from 0."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(self.frames), **fields}
        self.frames.append(sse_frame(data, kind))


def _function_call_events(events: _StreamEvents, index: int, item: dict[str, Any]) -> None:
    arguments = str(item.get("arguments", ""))
    where = {"item_id": item.get("id"), "output_index": index}
    # Clients append each delta to the added item's arguments: it must open empty.
    opened = {**item, "arguments": "", "status": "in_progress"}
    events.add("response.output_item.added", output_index=index, item=opened)
    events.add("response.function_call_arguments.delta", **where, delta=arguments)
    events.add("response.function_call_arguments.done", **where, arguments=arguments)
    events.add("response.output_item.done", output_index=index, item=item)


def _message_events(events: _StreamEvents, index: int, item: dict[str, Any]) -> None:
    opened = {**item, "status": "in_progress", "content": []}
    events.add("response.output_item.added", output_index=index, item=opened)
    content = item.get("content")
    for position, part in enumerate(content if isinstance(content, list) else []):
        if not isinstance(part, dict):
            continue
        where = {"item_id": item.get("id"), "output_index": index, "content_index": position}
        kind = part.get("type")
        if kind == "output_text":
            text = str(part.get("text", ""))
            empty = {"type": "output_text", "text": "", "annotations": []}
            events.add("response.content_part.added", **where, part=empty)
            events.add("response.output_text.delta", **where, delta=text, logprobs=[])
            annotations = part.get("annotations")
            for number, note in enumerate(annotations if isinstance(annotations, list) else []):
                events.add(
                    "response.output_text.annotation.added",
                    **where,
                    annotation_index=number,
                    annotation=note,
                )
            events.add("response.output_text.done", **where, text=text, logprobs=[])
        elif kind == "refusal":
            refusal = str(part.get("refusal", ""))
            events.add("response.content_part.added", **where, part={**part, "refusal": ""})
            events.add("response.refusal.delta", **where, delta=refusal)
            events.add("response.refusal.done", **where, refusal=refusal)
        else:
            events.add("response.content_part.added", **where, part=part)
        events.add("response.content_part.done", **where, part=part)
    events.add("response.output_item.done", output_index=index, item=item)


def _items(body: Any, key: str) -> list[dict[str, Any]]:
    items = body.get(key) if isinstance(body, dict) else None
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

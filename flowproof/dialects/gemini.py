"""Gemini generateContent (`…/models/<model>:generateContent`, `:streamGenerateContent`).

google-genai (Python, `/v1` by default) and @google/genai (npm, `/v1beta`) call it. Four
things set this API apart:

- The model and the streaming choice are in the PATH, not the body. `route` reads both; the
  model is folded into the body flowproof matches and stores, as its first key `model`, so a
  changed model is a divergence like any other and the trace says which model answered. The
  version (`v1`, `v1beta`) is forwarded as the agent sent it and is not matched.
- A streaming client asks `:streamGenerateContent?alt=sse` and gets `data:` frames, each a
  complete GenerateContentResponse, with no `[DONE]`; flowproof serves the recorded response
  as one such frame. Record always forwards `:generateContent`, so a trace serves both.
- A tool call is a `functionCall` part (name + `args` object) of a `model` content; its
  result is a `functionResponse` part (name + `response` OBJECT) of a `user` content.
- There are no call ids: a result answers the call of the same NAME, in order (the k-th
  `functionResponse` named `search` answers the k-th `functionCall` named `search`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

from flowproof.dialects.anthropic import canonical_input
from flowproof.dialects.base import (
    CallMade,
    Dialect,
    Envelope,
    ModelTurn,
    ResultSlot,
    Route,
    ToolEvent,
    sse_frame,
)

_PATH = re.compile(
    r"(?P<version>/v1[a-z0-9]*)/models/(?P<model>[^/:]+):"
    r"(?P<method>streamGenerateContent|generateContent)$"
)
_PART_KINDS = (
    "text",
    "functionCall",
    "functionResponse",
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
)
_UNFORWARDED_QUERY = ("alt", "key")
"""`alt=sse` asks for a stream, which record never does; `key=` would carry the agent's
placeholder credential next to flowproof's real one."""


class Gemini(Dialect):
    name = "gemini"
    path_marker = "/models/<model>:generateContent"
    # The version right before `/models`: Vertex AI's `…/publishers/google/models/…` is
    # another API (OAuth, another host) and is not served.
    path_pattern = r"/v1[a-z0-9]*/models/[^/:]+:(?:streamGenerateContent|generateContent)"
    upstream_path = "/v1beta/models/gemini:generateContent"
    upstream_from_origin = True
    upstream_variable = "GOOGLE_GEMINI_BASE_URL"
    default_upstream = "https://generativelanguage.googleapis.com"
    key_variables = ("FLOWPROOF_AGENT_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")

    def route(self, path: str, query: str) -> Route:
        found = _PATH.search(path.rstrip("/"))
        if found is None:  # dialect_for_path matched the pattern, so only a bare marker
            return Route(self.upstream_path, query)
        version = found["version"]
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True)]
        return Route(
            f"{version}/models/{found['model']}:generateContent",
            urlencode([(k, v) for k, v in kept if k not in _UNFORWARDED_QUERY]),
            stream=found["method"] == "streamGenerateContent",
            path_fields=(("model", found["model"]),),
        )

    def auth_headers(self, key: str) -> dict[str, str]:
        """Google takes the bare key in `x-goog-api-key`; a `Bearer ` prefix is dropped."""
        if key[:7].lower() == "bearer ":
            key = key[7:].strip()
        return {"x-goog-api-key": key}

    # -- facts read from bodies -------------------------------------------------------------
    def tool_calls(self, response: Any) -> list[tuple[str, str]]:
        return [
            (str(call.get("name", "")), canonical_input(call.get("args", {})))
            for part in _answer_parts(response)
            if isinstance(call := part.get("functionCall"), dict)
        ]

    def reply_text(self, response: Any) -> str | None:
        parts = _answer_parts(response)
        if any("functionCall" in part for part in parts):
            return None
        return _text(parts)

    def system_prompt(self, request: Any) -> str:
        system = request.get("systemInstruction") if isinstance(request, dict) else None
        if isinstance(system, str):
            return system
        return _text(_parts(system))

    def tool_exchange(self, request: Any) -> Iterator[ToolEvent]:
        """Each `model` content is a model turn; its `functionCall` parts are the calls, and
        each `functionResponse` part of a later content is a result, tied to its call by name
        and order (the ids are `<name>#<k>`, k counting that name's calls from 0)."""
        calls: dict[str, int] = {}
        results: dict[str, int] = {}
        for content in _contents(request):
            model = content.get("role") == "model"
            if model:
                yield ModelTurn()
            for part in _parts(content):
                call, answer = part.get("functionCall"), part.get("functionResponse")
                if model and isinstance(call, dict):
                    tool = str(call.get("name", ""))
                    yield CallMade(f"{tool}#{calls.get(tool, 0)}", tool)
                    calls[tool] = calls.get(tool, 0) + 1
                elif not model and isinstance(answer, dict):
                    tool = str(answer.get("name", ""))
                    slot = f"{tool}#{results.get(tool, 0)}"
                    results[tool] = results.get(tool, 0) + 1
                    yield ResultSlot(slot, answer, "response", as_object=True)

    def envelope(self, request: Any) -> Envelope:
        body = request if isinstance(request, dict) else {}
        return Envelope(
            model=body.get("model"),
            tools=_offered(body),
            roles=tuple(_role(content) for content in _contents(request)),
        )

    # -- rendering --------------------------------------------------------------------------
    def render_stream(self, request: Any, response: Any) -> Sequence[bytes]:
        """One `data:` frame holding the whole recorded response: every frame of this API is a
        complete response, and a client that concatenates the frames' parts rebuilds it."""
        return [sse_frame(response)]

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        return {
            "error": {
                "code": 400,
                "message": message,
                "status": "FAILED_PRECONDITION",
                "details": [{"reason": kind}],
            }
        }

    def text_response(self, request: Any, text: str) -> Any:
        model = request.get("model") if isinstance(request, dict) else None
        return {
            "candidates": [
                {
                    "content": {"parts": [{"text": text}], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0},
            "modelVersion": model or "flowproof-doctor",
            "responseId": "flowproof-doctor",
        }

    def tool_call_response(self, request: Any, tool: str, call_id: str) -> Any:
        response = self.text_response(request, "")
        call = {"functionCall": {"name": tool, "args": {}}}
        response["candidates"][0]["content"]["parts"] = [call]
        return response


def _offered(body: dict[str, Any]) -> tuple[str, ...]:
    """The declared functions' names, in order; any other tool (googleSearch, codeExecution)
    by its key."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        declared = tool.get("functionDeclarations")
        if isinstance(declared, list):
            names += [str(d.get("name", "?")) for d in declared if isinstance(d, dict)]
        else:
            names += list(tool)
    return tuple(names)


def _role(content: dict[str, Any]) -> str:
    """`model(functionCall)`, `user(functionResponse)`: a tool turn and a typed question are
    both `user` on the wire, so the part kinds show which one moved."""
    role = str(content.get("role", "user"))
    kinds = list(dict.fromkeys(_kind(part) for part in _parts(content)))
    return f"{role}({'+'.join(kinds)})" if kinds and kinds != ["text"] else role


def _kind(part: dict[str, Any]) -> str:
    return next((kind for kind in _PART_KINDS if kind in part), "?")


def _text(parts: list[dict[str, Any]]) -> str:
    """The joined text of the parts that are not thoughts (a thought is not the answer)."""
    return "".join(str(p.get("text", "")) for p in parts if "text" in p and not p.get("thought"))


def _contents(request: Any) -> list[dict[str, Any]]:
    contents = request.get("contents") if isinstance(request, dict) else None
    return [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []


def _parts(content: Any) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _answer_parts(response: Any) -> list[dict[str, Any]]:
    """The parts of the first candidate's content: what the model said."""
    candidates = response.get("candidates") if isinstance(response, dict) else None
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        return _parts(candidates[0].get("content"))
    return []

"""The Dialect protocol, its registry keyed by path substring, and where tool results go.

A dialect is pure: it reads and rewrites parsed JSON bodies and renders stream frames, and never
touches a socket. The proxy picks one by a SUBSTRING of the request path (a pattern, for a path
that carries a name), so a base URL with a doubled or missing `/v1` still reaches the right one.
What a path says beside the body (a model, a deployment, a stream) is read once, as a `Route`.

A dialect only TRANSLATES: where its bodies keep the tool calls and the tool results is said
once per API by `tool_exchange`; what flowproof does with them (substituting mocked results,
naming the latest results) is written once, here.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from flowproof.core.mocks import ToolMocks
from flowproof.core.registry import refuse_clash

TRANSPORT_KEYS = ("stream", "stream_options")
"""Request keys that choose how the answer travels, never what it says: not part of matching."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """The parts of a request a reader compares first: a one-line answer before any body diff."""

    model: Any
    tools: tuple[str, ...]
    roles: tuple[str, ...]


class CallLedger:
    """The tool calls of one conversation, in order, so that each tool result the agent reports
    can be traced to its tool and to WHICH call of that tool it answers.

    The k-th call of a tool in the conversation gets the k-th mocked result, so substitution
    depends on the request alone, not on proxy state (every request repeats the history).
    """

    def __init__(self, mocks: ToolMocks) -> None:
        self._mocks = mocks
        self._calls: dict[str, tuple[str, int]] = {}
        self._per_tool: dict[str, int] = {}

    def called(self, call_id: str, tool: str) -> None:
        occurrence = self._per_tool.get(tool, 0)
        self._calls[call_id] = (tool, occurrence)
        self._per_tool[tool] = occurrence + 1

    def mocked_result(self, call_id: str) -> str | None:
        """The mock's text for the result answering `call_id`; None when that tool is not
        mocked (or the call is unknown). Raises ToolResultsExhausted past a `results:` list."""
        tool, occurrence = self._calls.get(call_id, ("", 0))
        mock = self._mocks.get(tool)
        return None if mock is None else mock.content_for(tool, occurrence)


@dataclass(frozen=True, slots=True)
class CallMade:
    """The assistant asked for a tool in the conversation a request carries."""

    call_id: str
    """The id the API ties the call's result to (`tool_call_id`, `tool_use_id`, `call_id`)."""
    tool: str
    """The name of the tool asked for."""


@dataclass(frozen=True, slots=True)
class ResultSlot:
    """Where one tool result's content lives in a request body: `holder[key]`.

    `holder` is the very dict inside the body the exchange was read from, so writing to it
    rewrites that body; `substitute_tool_results` reads the exchange of a copy for that reason.
    """

    call_id: str
    """The call this result answers."""
    holder: dict[str, Any] = field(hash=False)  # a dict cannot be hashed; equality still counts
    """The message, block or item that holds the content."""
    key: str
    """The key of `holder` whose value is the content (`content`, `output`)."""
    text_parts: tuple[str, ...] | None = None
    """When the content is a list of parts, the part types whose text is the result's text
    (None: every part's text)."""
    as_object: bool = False
    """True when the API takes the content as a JSON object, not text (Gemini's
    `functionResponse.response`): its text is its JSON, and a mocked result is written as an
    object (a value that is not one is wrapped as `{"output": value}`, Gemini's own key)."""

    @property
    def text(self) -> str:
        if self.as_object:
            value = self.holder.get(self.key)
            return json.dumps(value, ensure_ascii=False) if value is not None else ""
        return join_text(self.holder.get(self.key), self.text_parts)

    def fill(self, mocked: str) -> None:
        """Write a mocked result's text into the body, in the form the API takes."""
        if not self.as_object:
            self.holder[self.key] = mocked
            return
        try:
            value = json.loads(mocked)
        except ValueError:
            value = mocked
        self.holder[self.key] = value if isinstance(value, dict) else {"output": value}


@dataclass(frozen=True, slots=True)
class Route:
    """What a request's path and query say beside its body, read once by `Dialect.route`.

    Most APIs say everything in the body. Gemini names the model and the streaming choice in
    the path (`/v1beta/models/<model>:streamGenerateContent`) and Azure the deployment
    (`/openai/deployments/<deployment>/chat/completions`); those facts are matched like any
    other, so they are folded into the body flowproof compares and stores (`adopt`), and taken
    out again before record forwards it (`outbound`).
    """

    upstream_path: str
    """Appended to the upstream base when recording."""
    query: str = ""
    """The query string record forwards (a trace never stores it)."""
    stream: bool | None = None
    """Whether the client asked for a stream, when the path says so; None: the body says."""
    path_fields: tuple[tuple[str, str], ...] = ()
    """(body key, value) of the facts the path carries, in the order they lead the body."""

    def adopt(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with the path's facts as its first keys (a body key of the same name is
        replaced: the path is what the API obeys)."""
        if not self.path_fields:
            return body
        names = {name for name, _ in self.path_fields}
        return {**dict(self.path_fields), **{k: v for k, v in body.items() if k not in names}}

    def outbound(self, body: Any) -> Any:
        """`body` as the upstream expects it: without the facts `adopt` folded in."""
        if not self.path_fields or not isinstance(body, dict):
            return body
        names = {name for name, _ in self.path_fields}
        return {key: value for key, value in body.items() if key not in names}


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """A new model turn began: tool results reported before it are no longer the latest."""


ToolEvent = CallMade | ResultSlot | ModelTurn
"""One fact of a conversation's tool exchange, as `Dialect.tool_exchange` yields them."""


def join_text(content: Any, part_types: Collection[str] | None = None) -> str:
    """The text of a content value: a plain string as it is, or the joined `text` of the
    parts of a list whose `type` is one of `part_types` (every part when None); "" otherwise."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(part.get("text", ""))
        for part in content
        if isinstance(part, dict) and (part_types is None or part.get("type") in part_types)
    )


class Dialect:
    """One wire API. Subclasses register themselves by `name` when they are defined."""

    name: ClassVar[str]
    path_marker: ClassVar[str]
    """A substring of the request path that selects this dialect (as shown to a user)."""
    path_pattern: ClassVar[str | None] = None
    """A regular expression in its place, for an API whose path carries a name
    (`/models/<model>:generateContent`); None: the marker, literally."""
    upstream_path: ClassVar[str]
    """Appended to the upstream base URL (which includes `/v1`) when recording."""
    upstream_from_origin: ClassVar[bool] = False
    """True when the upstream path starts at the host (`/v1beta/models/…`, `/openai/…`,
    `/api/chat`): the `/v1` ending FLOWPROOF_AGENT_UPSTREAM is dropped before it."""
    key_variables: ClassVar[tuple[str, ...] | None] = None
    """Where record reads this API's key, first set wins; None: the shared list
    (`redaction.SHARED_KEY_VARIABLES`)."""
    stream_content_type: ClassVar[str] = "text/event-stream"
    upstream_variable: ClassVar[str] = "OPENAI_BASE_URL"
    """The variable, in flowproof's own environment, naming this API's upstream when
    FLOWPROOF_AGENT_UPSTREAM is not set."""
    upstream_variable_adds_v1: ClassVar[bool] = False
    """True when that variable's convention leaves `/v1` out (ANTHROPIC_BASE_URL)."""
    default_upstream: ClassVar[str] = "https://api.openai.com/v1"
    passthrough_headers: ClassVar[tuple[str, ...]] = ()
    """Request headers forwarded to the upstream as the agent sent them (never stored)."""

    _registry: ClassVar[dict[str, Dialect]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        existing = Dialect._registry.get(cls.name)
        refuse_clash("dialect", cls.name, type(existing) if existing else None, cls)
        Dialect._registry[cls.name] = cls()

    # -- facts read from bodies -------------------------------------------------------------
    def tool_calls(self, response: Any) -> list[tuple[str, str]]:
        """(name, raw argument string) for every tool call the model asked for."""
        raise NotImplementedError

    def reply_text(self, response: Any) -> str | None:
        """The assistant's text, or None when the response is a tool call."""
        raise NotImplementedError

    def system_prompt(self, request: Any) -> str:
        raise NotImplementedError

    def tool_exchange(self, request: Any) -> Iterator[ToolEvent]:
        """The tool calls, tool-result slots and new model turns of the conversation `request`
        carries, in conversation order. An API without tools yields nothing."""
        return iter(())

    def latest_tool_results(self, request: Any) -> list[tuple[str, str]]:
        """(tool name, content) of the tool results this request reports back to the model:
        those after its last model turn, as the model saw them (after substitution). A result
        whose call is not in the conversation is named by its call id."""
        names: dict[str, str] = {}
        results: list[tuple[str, str]] = []
        for event in self.tool_exchange(request):
            if isinstance(event, ModelTurn):
                results = []
            elif isinstance(event, CallMade):
                names[event.call_id] = event.tool
            else:
                results.append((names.get(event.call_id, event.call_id), event.text))
        return results

    def envelope(self, request: Any) -> Envelope:
        raise NotImplementedError

    # -- what the path says -----------------------------------------------------------------
    def route(self, path: str, query: str) -> Route:
        """The facts of a request's path (a path `dialect_for_path` gave this dialect)."""
        return Route(self.upstream_path, query)

    def wants_stream(self, request: Any) -> bool:
        """Whether a body asks for a stream (when its path does not say, `Route.stream`)."""
        return wants_stream(request)

    def upstream_body(self, request: Any) -> Any:
        """The body record sends upstream: always a request for one complete answer, since
        the trace keeps answers whole and a streaming client is served a synthesized stream."""
        return without_transport(request)

    def auth_headers(self, key: str) -> dict[str, str]:
        """How the upstream of this API expects the key (a bare key is Bearer-wrapped)."""
        value = key if key.lower().startswith("bearer ") else f"Bearer {key}"
        return {"Authorization": value}

    # -- rewriting and rendering ------------------------------------------------------------
    def substitute_tool_results(self, request: Any, mocks: ToolMocks) -> Any:
        """A copy of `request` whose mocked tool results carry the spec's values."""
        if not mocks:
            return request
        request = copy.deepcopy(request)
        ledger = CallLedger(mocks)
        for event in self.tool_exchange(request):
            if isinstance(event, CallMade):
                ledger.called(event.call_id, event.tool)
            elif isinstance(event, ResultSlot):
                mocked = ledger.mocked_result(event.call_id)
                if mocked is not None:
                    event.fill(mocked)
        return request

    def render_stream(self, request: Any, response: Any) -> Sequence[bytes]:
        """The response as the SSE frames a streaming client of this API expects."""
        raise NotImplementedError

    def error_body(self, message: str, kind: str) -> dict[str, Any]:
        raise NotImplementedError

    def text_response(self, request: Any, text: str) -> Any:
        """A complete, minimal answer of `text` in this API's shape (for `flowproof doctor`)."""
        raise NotImplementedError

    def tool_call_response(self, request: Any, tool: str, call_id: str) -> Any | None:
        """A complete, minimal answer asking for one call of `tool` with no arguments, in this
        API's shape (for `flowproof doctor`); None when this dialect has none."""
        return None


def dialect_for_path(path: str) -> Dialect | None:
    """The dialect whose marker comes first in the path AND ends it (trailing slashes ignored).

    A doubled or missing `/v1` in front still routes; a sub-resource such as
    `/v1/messages/count_tokens` (a different, billed endpoint) or
    `/v1/chat/completions/{id}/messages` is not a model call this proxy serves. Coming first is
    also what tells an Azure path (`/openai/deployments/<d>/chat/completions`) from the plain
    OpenAI one it ends with.
    """
    tail = path.rstrip("/")
    found = [(hit, d) for d in Dialect._registry.values() if (hit := _marker_in(d, tail))]
    if not found:
        return None
    hit, first = min(found, key=lambda pair: pair[0].start())
    return first if hit.end() == len(tail) else None


def _marker_in(dialect: Dialect, path: str) -> re.Match[str] | None:
    """The first place the dialect's marker (or pattern) occurs in `path`."""
    return re.search(dialect.path_pattern or re.escape(dialect.path_marker), path)


def dialect_named(name: str) -> Dialect | None:
    return Dialect._registry.get(name)


def every_dialect() -> tuple[Dialect, ...]:
    return tuple(Dialect._registry.values())


def offered_tools(request: Any) -> tuple[str, ...]:
    """Names of the tools a request offers, in order, in the OpenAI and Anthropic shapes:
    nested under `function` (chat completions, Ollama) or flat (Responses, Anthropic); a
    built-in tool that has no name is shown by its `type`."""
    tools = request.get("tools") if isinstance(request, dict) else None
    return tuple(tool_name(tool) for tool in tools or [] if isinstance(tool, dict))


def tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    nested = function.get("name") if isinstance(function, dict) else None
    return str(nested or tool.get("name") or tool.get("type", "?"))


def wants_stream(request: Any) -> bool:
    """Streaming is decided by the body alone: SDKs send `Accept: application/json` even when
    they stream, so the header cannot be trusted."""
    return isinstance(request, dict) and request.get("stream") is True


def without_transport(request: Any) -> Any:
    if not isinstance(request, dict):
        return request
    return {key: value for key, value in request.items() if key not in TRANSPORT_KEYS}


def sse_frame(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()

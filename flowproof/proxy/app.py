"""The proxy's request handler and its loopback listener.

`make_app` builds the handler around a backend (replay or forward); `serve` listens for it on
loopback with the proxy's own HTTP server (proxy/http.py). A request whose path does not start
with the flow's capability (guards/capability.py) was not sent by the agent: it is answered
403 before anything else reads it, never reaches the backend (so it is neither forwarded nor
served a recorded turn), and is only counted (`Traffic.outsiders`). Every other path is read
with the capability taken off, so the token appears in nothing the proxy writes down. A request
no backend can be asked about (a path no dialect serves, a method other than POST, a body that
is empty, not JSON or not an object) is answered 4xx with `x-should-retry: false` and written
into the traffic as refused, which fails the flow; so is a request the HTTP server refuses
before it is whole (ambiguous or malformed framing, a head over its limit), when its path
carries the capability: without it, such a request is only counted, like any outsider's, so a
stranger cannot fail the flow by sending garbage. `serve` binds to 127.0.0.1 only, so that
nothing off the machine can even knock.

A backend that can answer a request by its bytes alone (`ExactBackend`: replay, when the bytes
are the very bytes a turn was recorded from) is asked before the body is parsed, and hands
back the turn and a response rendered once per turn; otherwise the body is read, checked and
handed over as a `ModelCall`, which also carries the raw bytes record takes a digest of.

A WebSocket upgrade on a model path (Codex CLI's Responses WebSocket transport) is answered
426 at once and is NOT a failure: flowproof records and replays model calls over HTTP only,
and 426 is the status Codex takes as "use HTTP" without retrying (any other 4xx it retries
seven times, about 7 s, before falling back). The attempt is kept in `Traffic.requests` so
`flowproof doctor` shows it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from flowproof.core.lanes import MODEL_LANE
from flowproof.dialects import Dialect, dialect_for_path
from flowproof.dialects.base import Dialect as DialectBase
from flowproof.dialects.base import Route
from flowproof.guards.capability import Capability
from flowproof.live.traffic import NO_RETRY, Answer, Refused, Traffic
from flowproof.matching.exact import request_digest
from flowproof.proxy import http
from flowproof.proxy.h1 import Request
from flowproof.proxy.http import Handler, Response, Server, json_response
from flowproof.trace.model import Turn

LOOPBACK = http.LOOPBACK
MAX_BODY_BYTES = 64 * 1024 * 1024
WEBSOCKET = "websocket"
"""What `Traffic.requests` says served a WebSocket upgrade: the 426 refusal."""
_DIALECT_PATHS_KEPT = 64
MALFORMED = "malformed"
"""What `Traffic.requests` says served a request the HTTP server refused before it was whole."""


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model request as the app hands it to a backend, already checked and parsed."""

    dialect: Dialect
    body: Any
    """The JSON object the agent sent, with the facts its route carries folded in."""
    headers: Mapping[str, str]
    method: str = "POST"
    """As the agent sent it: record forwards it; a trace does not store it."""
    route: Route | None = None
    """What the path says (record forwards it; a trace stores only what it folded into the
    body)."""
    raw: bytes = b""
    """The body's bytes as the agent sent them."""
    path: str = ""
    """The path as the route read it (capability off)."""
    query: str = ""
    """The query string as the route read it."""

    def digest(self) -> str:
        """What record keeps of these bytes, so replay serves them unread (matching/exact.py)."""
        return request_digest(self.dialect.name, self.path, self.query, self.raw)


@dataclass(frozen=True, slots=True)
class Served:
    """A request answered by its bytes alone: the turn the traffic keeps, the response ready."""

    turn: Turn
    response: Response


class Backend(Protocol):
    async def answer(self, call: ModelCall) -> Answer:
        """The answer to `call`: served from a trace, forwarded upstream, or canned."""
        ...


@runtime_checkable
class ExactBackend(Protocol):
    def answer_exact(self, dialect: Dialect, path: str, sent: Request) -> Served | None:
        """The answer to a request whose bytes say it all (a replay of the very bytes
        recorded); None when the request must be read, and `answer` asked. `path` is the
        path as the route reads it (capability off); the body is `sent.body`, unread."""
        ...


@dataclass(frozen=True, slots=True)
class App:
    """The proxy's handler in two lanes: `at_once` answers, without waiting on anything and
    without reading the body, a request the backend can serve by its bytes alone (a replay of
    the very bytes recorded), and says None for every other request, which `handle` answers.
    Calling the app runs both, as the server does."""

    handle: Handler
    at_once: Callable[[Request], Response | None] | None = None

    async def __call__(self, request: Request) -> Response:
        if self.at_once is not None:
            response = self.at_once(request)
            if response is not None:
                return response
        return await self.handle(request)


def make_app(backend: Backend, traffic: Traffic, capability: Capability) -> App:
    exact = backend if isinstance(backend, ExactBackend) else None
    # An agent sends its calls to a path or two: which dialect serves each is looked up once.
    dialects: dict[str, Dialect | None] = {}

    def dialect_of(path: str) -> Dialect | None:
        if path not in dialects:
            if len(dialects) >= _DIALECT_PATHS_KEPT:
                dialects.clear()
            dialects[path] = dialect_for_path(path)
        return dialects[path]

    def at_once(sent: Request) -> Response | None:
        """The exact backend's answer, or None: then `handle` answers, and on every condition
        checked here before the backend is asked, it answers as it always has, so a request
        `handle` reads is one this lane has already offered the backend, or one it refuses."""
        assert exact is not None
        if sent.method != "POST" or sent.headers.lowered("upgrade") is not None:
            return None
        raw = sent.body
        if not raw or raw.isspace():
            return None
        admitted = _admitted_target(sent, capability)
        if admitted is None:
            return None
        path, target = admitted
        dialect = dialect_of(path)
        if dialect is None:
            return None
        try:
            served = exact.answer_exact(dialect, path, sent)
            if served is None:
                return None
            traffic.requests.append((sent.method, target, dialect.name))
            traffic.add(MODEL_LANE, served.turn)
        except Exception as exc:  # noqa: BLE001 - a bug of ours fails the flow, in one line
            return failed(sent.method, target, exc)
        return served.response

    def failed(method: str, target: str, exc: Exception) -> Response:
        traffic.fail(f"flowproof's proxy failed on {method} {target}: {type(exc).__name__}: {exc}")
        return _error(500, "flowproof: internal error in the proxy; see the flowproof report")

    async def handle(sent: Request) -> Response:
        request = _admitted(sent, capability)
        if request is None:
            traffic.refuse_outsider(sent.method, sent.path)
            return _refuse_outsider()
        try:
            return await answer(request)
        except Exception as exc:  # noqa: BLE001 - a bug of ours fails the flow, in one line
            return failed(request.method, request.path_qs, exc)

    async def answer(request: Request) -> Response:
        dialect = dialect_of(request.path)
        if dialect is not None and _is_websocket_upgrade(request):
            traffic.requests.append((request.method, request.path_qs, WEBSOCKET))
            return _refuse_websocket()
        # path_qs: doctor shows the path as the agent sent it (`/v1/messages?beta=true`).
        traffic.requests.append((request.method, request.path_qs, dialect.name if dialect else "?"))
        if dialect is None:
            markers = ", ".join(_served_markers())
            return _unservable(
                request,
                404,
                f"no model API at {request.path}; paths containing {markers} are served",
            )
        if request.method != "POST":
            return _unservable(request, 405, f"{request.method} is not a model call; use POST")
        raw = request.body
        if not raw or raw.isspace():  # (strip() would copy the whole body to say so)
            return _unservable(request, 400, "the request body is empty")
        # (`at_once` has offered this request to an exact backend already.)
        try:
            body = json.loads(raw)
        except ValueError:
            return _unservable(request, 400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _unservable(request, 400, "the request body is JSON but not an object")
        route = dialect.route(request.path, request.query_string)
        stream = route.stream if route.stream is not None else dialect.wants_stream(body)
        body = route.adopt(body)
        call = ModelCall(
            dialect,
            body,
            request.headers,
            request.method,
            route,
            raw,
            request.path,
            request.query_string,
        )
        answered = await backend.answer(call)
        if answered.turn is not None:
            traffic.add(MODEL_LANE, answered.turn)
        return rendered(dialect, stream, body, answered)

    def _unservable(request: Request, status: int, why: str) -> Response:
        """Written down as a failed request before it is answered: an agent that copes with
        the 4xx must not turn the flow green (flowproof doctor only counts it)."""
        number = len(traffic.requests)
        traffic.refuse(Refused(number, request.method, request.path, status, why))
        return _error(status, f"flowproof: {why}")

    return App(handle, at_once if exact is not None else None)


async def serve(
    app: App, port: int = 0, *, traffic: Traffic, capability: Capability
) -> tuple[Server, int]:
    """Listen for `app` on 127.0.0.1:`port` (0 = ephemeral); the server and its port.
    A request the server refuses before the handler could see it fails the flow in `traffic`
    when it carries the capability; otherwise it is an outsider's, and only counted."""

    def refused(refusal: http.Refusal) -> None:
        path = capability.admit(refusal.path)
        if path is None or refusal.path == "?":
            traffic.refuse_outsider(refusal.method, refusal.path)
            return
        traffic.requests.append((refusal.method, path, MALFORMED))
        number = len(traffic.requests)
        traffic.refuse(Refused(number, refusal.method, path, refusal.status, refusal.why))

    server = await http.serve(app, port, max_body=MAX_BODY_BYTES, on_refusal=refused)
    return server, server.port


def _admitted(request: Request, capability: Capability) -> Request | None:
    """`request` as the agent meant it, its path without the capability; None when it does
    not carry it."""
    admitted = _admitted_target(request, capability)
    if admitted is None:
        return None
    path, target = admitted
    if path == request.path:  # a `url:` flow's service, which was started without it
        return request
    return replace(request, path=path, path_qs=target)


def _admitted_target(request: Request, capability: Capability) -> tuple[str, str] | None:
    """The request's path and target (path and query) without the capability; None when it
    does not carry it."""
    path = capability.admit(request.path)
    if path is None:
        return None
    if path == request.path:
        return path, request.path_qs
    target = request.path_qs.removeprefix(capability.prefix)
    if target == request.path_qs:  # the client escaped characters of the token itself
        target = path + (f"?{request.query_string}" if request.query_string else "")
    return path, target if target.startswith("/") else "/" + target


def _refuse_outsider() -> Response:
    # The same words whoever asked: a stranger learns nothing, and an agent whose client
    # dropped the path of its base URL is told what to fix.
    return _error(
        403,
        "flowproof: this proxy serves only the agent flowproof started, at the base URL "
        "flowproof gave it; the request's path did not start with it",
    )


def rendered(dialect: Dialect, stream: bool, body: Any, answered: Answer) -> Response:
    """What the agent is sent for `answered`: its SSE frames when the request streams (read
    from the request's `body`), else its JSON."""
    if answered.status == 200 and stream:
        frames = dialect.render_stream(body, answered.body)
        return _stream(frames, dialect.stream_content_type)
    return json_response(answered.status, answered.body, answered.headers)


def _stream(frames: Sequence[bytes], content_type: str) -> Response:
    return Response(200, {"Content-Type": content_type, "Cache-Control": "no-cache"}, chunks=frames)


def _served_markers() -> list[str]:
    """The path markers, less those that contain a shorter one (an Azure path ends in the
    OpenAI one, so `/chat/completions` already says it)."""
    markers = {d.path_marker for d in DialectBase._registry.values()}
    return sorted(m for m in markers if not any(o != m and o in m for o in markers))


def _is_websocket_upgrade(request: Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _refuse_websocket() -> Response:
    return _error(
        426, "flowproof: model calls are recorded and replayed over HTTP; use HTTP, not WebSocket"
    )


def _error(status: int, message: str) -> Response:
    body = {"error": {"message": message, "type": "flowproof_error"}}
    return json_response(status, body, NO_RETRY)

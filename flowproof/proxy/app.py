"""The proxy's request handler and its loopback listener.

`ModelProxy` is the handler around a backend (replay, record or canned; `make_app` builds it);
`serve` listens for it on loopback with the proxy's own HTTP server (proxy/http.py). A request
whose path does not start with the flow's capability (guards/capability.py) was not sent by the
agent: it is answered 403 before anything else reads it, never reaches the backend (so it is
neither forwarded nor served a recorded turn), and is only counted (`Traffic.outsiders`). Every
other path is read with the capability taken off, so the token appears in nothing the proxy
writes down. A request no backend can be asked about (a path no dialect serves, a method other
than POST, a body that is empty, not JSON or not an object) is answered 4xx with
`x-should-retry: false` and written into the traffic as refused, which fails the flow; so is a
request the HTTP server refuses before it is whole (ambiguous or malformed framing, a head over
its limit), when its path carries the capability: without it, such a request is only counted,
like any outsider's, so a stranger cannot fail the flow by sending garbage. `serve` binds to
127.0.0.1 only, so that nothing off the machine can even knock.

A request goes through the handler's stages in order: admitted (`_admit`: the capability, a
path some dialect serves, POST, a body), then served by its bytes when the backend can
(`_by_bytes`, an `ExactBackend`: replay, when the bytes are the very bytes a turn was recorded
from, which it answers before the body is parsed), else read (`_read`: JSON, an object, the
route's facts folded in) and answered by the backend (`_answer`), the answer rendered by
proxy/render.py. proxy/backend.py is the seam: what a backend is handed (`ModelCall`, which
also carries the raw bytes record takes a digest of) and what it hands back.

A WebSocket upgrade on a model path (Codex CLI's Responses WebSocket transport) is answered
426 at once and is NOT a failure: flowproof records and replays model calls over HTTP only,
and 426 is the status Codex takes as "use HTTP" without retrying (any other 4xx it retries
seven times, about 7 s, before falling back). The attempt is kept in `Traffic.requests` so
`flowproof doctor` shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from flowproof.core.lanes import MODEL_LANE
from flowproof.dialects import Dialect, dialect_for_path
from flowproof.dialects.base import Dialect as DialectBase
from flowproof.guards.capability import Capability
from flowproof.live.traffic import Refused, Traffic
from flowproof.proxy import http, render
from flowproof.proxy.backend import Backend, ExactBackend, ModelCall
from flowproof.proxy.h1 import Request
from flowproof.proxy.http import Response, Server

LOOPBACK = http.LOOPBACK
MAX_BODY_BYTES = 64 * 1024 * 1024
WEBSOCKET = "websocket"
"""What `Traffic.requests` says served a WebSocket upgrade: the 426 refusal."""
_DIALECT_PATHS_KEPT = 64
MALFORMED = "malformed"
"""What `Traffic.requests` says served a request the HTTP server refused before it was whole."""


@dataclass(frozen=True, slots=True)
class _Admitted:
    """A request past admission: sent by the agent, to a model path, servable."""

    sent: Request
    dialect: Dialect
    path: str
    """The path with the capability taken off."""
    target: str
    """The path and query with the capability taken off (`/v1/messages?beta=true`): what the
    traffic and every message name the request by."""


class ModelProxy:
    """The proxy's handler: one function per stage of a request (see the module doc), called
    by the HTTP server for every request in turn."""

    def __init__(self, backend: Backend, traffic: Traffic, capability: Capability) -> None:
        self._backend = backend
        self._exact = backend if isinstance(backend, ExactBackend) else None
        self._traffic = traffic
        self._capability = capability
        # An agent sends its calls to a path or two: which dialect serves each is looked up once.
        self._dialects: dict[str, Dialect | None] = {}

    async def __call__(self, sent: Request) -> Response:
        try:
            admitted = self._admit(sent)
            if isinstance(admitted, Response):
                return admitted
            served = self._by_bytes(admitted)
            if served is not None:
                return served
            call = self._read(admitted)
            if isinstance(call, Response):
                return call
            return await self._answer(call, admitted)
        except Exception as exc:  # noqa: BLE001 - a bug of ours fails the flow, in one line
            return self._failed(sent, exc)

    def _admit(self, sent: Request) -> _Admitted | Response:
        """The request, admitted; or what it is answered when it is not. One without the
        capability is an outsider's: answered 403 and only counted. Every other is written
        into the traffic; one no backend can be asked about fails the flow."""
        where = _admitted_target(sent, self._capability)
        if where is None:
            self._traffic.refuse_outsider(sent.method, sent.path)
            return _refuse_outsider()
        path, target = where
        dialect = self._dialect_of(path)
        if dialect is not None and _is_websocket_upgrade(sent):
            self._traffic.requests.append((sent.method, target, WEBSOCKET))
            return _refuse_websocket()
        # target: doctor shows the path as the agent sent it (`/v1/messages?beta=true`).
        self._traffic.requests.append((sent.method, target, dialect.name if dialect else "?"))
        if dialect is None:
            markers = ", ".join(_served_markers())
            why = f"no model API at {path}; paths containing {markers} are served"
            return self._unservable(sent.method, path, 404, why)
        if sent.method != "POST":
            return self._unservable(
                sent.method, path, 405, f"{sent.method} is not a model call; use POST"
            )
        if not sent.body or sent.body.isspace():  # (strip() would copy the whole body to say so)
            return self._unservable(sent.method, path, 400, "the request body is empty")
        return _Admitted(sent, dialect, path, target)

    def _by_bytes(self, admitted: _Admitted) -> Response | None:
        """The exact backend's answer to the request's bytes, unread; None when it must be
        read, which then decides exactly as this would have."""
        if self._exact is None:
            return None
        served = self._exact.answer_exact(admitted.dialect, admitted.path, admitted.sent)
        if served is None:
            return None
        self._traffic.add(MODEL_LANE, served.turn)
        return served.response

    def _read(self, admitted: _Admitted) -> ModelCall | Response:
        """The request as a backend is handed it: its body a JSON object, with the facts its
        route carries folded in; or the 400 it is answered when it is not one."""
        sent, dialect, path = admitted.sent, admitted.dialect, admitted.path
        try:
            body = json.loads(sent.body)
        except ValueError:
            return self._unservable(sent.method, path, 400, "the request body is not JSON")
        if not isinstance(body, dict):
            why = "the request body is JSON but not an object"
            return self._unservable(sent.method, path, 400, why)
        route = dialect.route(path, sent.query_string)
        return ModelCall(
            dialect,
            route.adopt(body),
            sent.headers,
            sent.method,
            route,
            sent.body,
            path,
            sent.query_string,
        )

    async def _answer(self, call: ModelCall, admitted: _Admitted) -> Response:
        """The backend's answer to `call`, its turn written into the traffic, rendered as the
        request asked: streamed when its route or its body says so."""
        answered = await self._backend.answer(call)
        if answered.turn is not None:
            self._traffic.add(MODEL_LANE, answered.turn)
        route = call.route
        assert route is not None  # _read always gives one
        stream = route.stream if route.stream is not None else call.dialect.wants_stream(call.body)
        # (The route folds only path facts into the body, never `stream`, which a path says
        # through `route.stream`: the folded body asks for a stream as the sent one did.)
        return render.answer(call.dialect, stream, call.body, answered)

    def _unservable(self, method: str, path: str, status: int, why: str) -> Response:
        """Written down as a failed request before it is answered: an agent that copes with
        the 4xx must not turn the flow green (flowproof doctor only counts it)."""
        number = len(self._traffic.requests)
        self._traffic.refuse(Refused(number, method, path, status, why))
        return render.error(status, f"flowproof: {why}")

    def _failed(self, sent: Request, exc: Exception) -> Response:
        where = _admitted_target(sent, self._capability)
        target = where[1] if where is not None else "?"
        self._traffic.fail(
            f"flowproof's proxy failed on {sent.method} {target}: {type(exc).__name__}: {exc}"
        )
        return render.error(500, "flowproof: internal error in the proxy; see the flowproof report")

    def _dialect_of(self, path: str) -> Dialect | None:
        dialects = self._dialects
        if path not in dialects:
            if len(dialects) >= _DIALECT_PATHS_KEPT:
                dialects.clear()
            dialects[path] = dialect_for_path(path)
        return dialects[path]


def make_app(backend: Backend, traffic: Traffic, capability: Capability) -> ModelProxy:
    return ModelProxy(backend, traffic, capability)


async def serve(
    app: ModelProxy, port: int = 0, *, traffic: Traffic, capability: Capability
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


def _admitted_target(request: Request, capability: Capability) -> tuple[str, str] | None:
    """The request's path and target (path and query) without the capability; None when it
    does not carry it."""
    path = capability.admit(request.path)
    if path is None:
        return None
    if path == request.path:  # a `url:` flow's service, which was started without it
        return path, request.path_qs
    target = request.path_qs.removeprefix(capability.prefix)
    if target == request.path_qs:  # the client escaped characters of the token itself
        target = path + (f"?{request.query_string}" if request.query_string else "")
    return path, target if target.startswith("/") else "/" + target


def _refuse_outsider() -> Response:
    # The same words whoever asked: a stranger learns nothing, and an agent whose client
    # dropped the path of its base URL is told what to fix.
    return render.error(
        403,
        "flowproof: this proxy serves only the agent flowproof started, at the base URL "
        "flowproof gave it; the request's path did not start with it",
    )


def _served_markers() -> list[str]:
    """The path markers, less those that contain a shorter one (an Azure path ends in the
    OpenAI one, so `/chat/completions` already says it)."""
    markers = {d.path_marker for d in DialectBase._registry.values()}
    return sorted(m for m in markers if not any(o != m and o in m for o in markers))


def _is_websocket_upgrade(request: Request) -> bool:
    return (request.headers.lowered("upgrade") or "").lower() == "websocket"


def _refuse_websocket() -> Response:
    return render.error(
        426, "flowproof: model calls are recorded and replayed over HTTP; use HTTP, not WebSocket"
    )

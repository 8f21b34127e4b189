"""The aiohttp application and its loopback listener.

`make_app` builds the app around a backend (replay or forward) so unit tests can drive it with
aiohttp's test client. A request no backend can be asked about (a path no dialect serves, a
method other than POST, a body that is empty, not JSON or not an object) is answered 4xx with
`x-should-retry: false` and written into the traffic as refused, which fails the flow.
`serve` binds the app to 127.0.0.1 only, because the proxy answers anyone who asks and must not
be reachable off the machine.

A WebSocket upgrade on a model path (Codex CLI's Responses WebSocket transport) is answered
426 at once and is NOT a failure: flowproof records and replays model calls over HTTP only,
and 426 is the status Codex takes as "use HTTP" without retrying (any other 4xx it retries
seven times, about 7 s, before falling back). The attempt is kept in `Traffic.requests` so
`flowproof doctor` shows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from aiohttp import web

from flowproof.dialects import Dialect, dialect_for_path
from flowproof.dialects.base import Dialect as DialectBase
from flowproof.dialects.base import Route
from flowproof.proxy.traffic import NO_RETRY, Answer, Refused, Traffic

LOOPBACK = "127.0.0.1"
MAX_BODY_BYTES = 64 * 1024 * 1024
WEBSOCKET = "websocket"
"""What `Traffic.requests` says served a WebSocket upgrade: the 426 refusal."""


class Backend(Protocol):
    async def answer(
        self,
        dialect: Dialect,
        request: Any,
        headers: Mapping[str, str],
        *,
        method: str = "POST",
        route: Route | None = None,
    ) -> Answer:
        """`method` as the agent sent it and what its path says (record forwards both; a
        trace stores neither, but for the facts `route` folded into the body)."""
        ...


def make_app(backend: Backend, traffic: Traffic) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        dialect = dialect_for_path(request.path)
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
        raw = await request.read()
        if not raw.strip():
            return _unservable(request, 400, "the request body is empty")
        try:
            body = json.loads(raw)
        except ValueError:
            return _unservable(request, 400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _unservable(request, 400, "the request body is JSON but not an object")
        route = dialect.route(request.path, request.query_string)
        stream = route.stream if route.stream is not None else dialect.wants_stream(body)
        body = route.adopt(body)
        answer = await backend.answer(
            dialect, body, request.headers, method=request.method, route=route
        )
        if answer.status == 200 and stream:
            frames = dialect.render_stream(body, answer.body)
            return await _stream(request, frames, dialect.stream_content_type)
        return _json(answer)

    def _unservable(request: web.Request, status: int, why: str) -> web.Response:
        """Written down as a failed request before it is answered: an agent that copes with
        the 4xx must not turn the flow green (flowproof doctor only counts it)."""
        number = len(traffic.requests)
        traffic.refuse(Refused(number, request.method, request.path, status, why))
        return _error(status, f"flowproof: {why}")

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def serve(app: web.Application, port: int = 0) -> tuple[web.AppRunner, int]:
    """Start `app` on 127.0.0.1:`port` (0 = ephemeral) and return the runner and bound port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, LOOPBACK, port)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1]
    return runner, int(bound)


async def _stream(request: web.Request, frames: Any, content_type: str) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": content_type, "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    for frame in frames:
        await response.write(frame)
    await response.write_eof()
    return response


def _json(answer: Answer) -> web.Response:
    body = (
        answer.body if isinstance(answer.body, str) else json.dumps(answer.body, ensure_ascii=False)
    )
    return web.Response(
        status=answer.status, text=body, content_type="application/json", headers=answer.headers
    )


def _served_markers() -> list[str]:
    """The path markers, less those that contain a shorter one (an Azure path ends in the
    OpenAI one, so `/chat/completions` already says it)."""
    markers = {d.path_marker for d in DialectBase._registry.values()}
    return sorted(m for m in markers if not any(o != m and o in m for o in markers))


def _is_websocket_upgrade(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


def _refuse_websocket() -> web.Response:
    return _error(
        426, "flowproof: model calls are recorded and replayed over HTTP; use HTTP, not WebSocket"
    )


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "flowproof_error"}}
    return web.Response(
        status=status, text=json.dumps(body), content_type="application/json", headers=NO_RETRY
    )

"""What the agent is sent: the one place a model answer or a refusal becomes a response.

The app (proxy/app.py) renders what a backend answered a read request, and its own refusals;
the replay backend (proxy/replay.py) renders what it serves a request by its bytes alone,
through `for_bytes`, which decides from the bytes what the app would decide from the parse.
Either way the response is the one `answer` gives: the answer's SSE frames when the request
streams, else its JSON. (The HTTP server's own refusals of malformed framing, sent before any
request exists, are proxy/http.py's.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from flowproof.dialects import Dialect
from flowproof.dialects.base import Route
from flowproof.live.traffic import NO_RETRY, Answer
from flowproof.matching.exact import holds_ascii_escape
from flowproof.proxy.http import Response, json_response

_STREAM_KEY = re.compile(rb'"stream')
"""The start of the `stream` and `stream_options` keys, as bytes free of `\\u` escapes spell
them (a compiled literal search: faster than `bytes.__contains__` on long bodies)."""


def answer(dialect: Dialect, stream: bool, body: Any, answered: Answer) -> Response:
    """What the agent is sent for `answered`: its SSE frames when the request streams (read
    from the request's `body`), else its JSON."""
    if answered.status == 200 and stream:
        frames = dialect.render_stream(body, answered.body)
        return _stream(frames, dialect.stream_content_type)
    return json_response(answered.status, answered.body, answered.headers)


def for_bytes(dialect: Dialect, route: Route, raw: bytes, answered: Answer) -> Response:
    """What `answer` renders for a request of these bytes, sent to `route`, answered
    `answered`: the body parsed only when the answer streams, or when the bytes cannot say it
    does not."""
    body: Any = None
    if route.stream is not None:
        stream = route.stream
    elif (
        not _STREAM_KEY.search(raw) and not holds_ascii_escape(raw) and not dialect.wants_stream({})
    ):
        # `wants_stream` reads the body's `stream` key alone, and bytes with no `\u` escape of
        # an ASCII letter cannot spell it otherwise: the body answers as an empty one does.
        stream = False
    else:
        body = json.loads(raw)
        stream = dialect.wants_stream(body)
    if stream:
        body = route.adopt(json.loads(raw) if body is None else body)
    return answer(dialect, stream, body, answered)


def error(status: int, message: str) -> Response:
    """A refusal the app words itself, with `x-should-retry: false` so an SDK neither retries
    nor backs off."""
    body = {"error": {"message": message, "type": "flowproof_error"}}
    return json_response(status, body, NO_RETRY)


def _stream(frames: Sequence[bytes], content_type: str) -> Response:
    return Response(200, {"Content-Type": content_type, "Cache-Control": "no-cache"}, chunks=frames)

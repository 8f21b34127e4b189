"""The seam between the proxy's app (proxy/app.py) and its backends (replay, record, canned):
what a backend is handed for a request, what it hands back, and the two ways of asking.

Every backend answers a read, checked request (`Backend.answer(ModelCall)`). A backend that can
answer some requests by their bytes alone (`ExactBackend`: replay, for the very bytes a turn was
recorded from) is asked that first, before the body is parsed, and hands back the turn it
served and the response, rendered (proxy/render.py); otherwise the app reads the request and
asks `answer`. Backends import from here and from the renderer, never from the app.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from flowproof.dialects import Dialect
from flowproof.dialects.base import Route
from flowproof.live.traffic import Answer
from flowproof.matching.exact import request_digest
from flowproof.proxy.h1 import Request
from flowproof.proxy.http import Response
from flowproof.trace.model import Turn


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

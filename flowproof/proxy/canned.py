"""CannedBackend: answers every model call with one fixed text, for `flowproof doctor`.

Like replay it has no network client: doctor needs no key, no spec and no model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowproof.dialects.base import Dialect, Route
from flowproof.lanes import MODEL_LANE
from flowproof.trace.model import Turn
from flowproof.traffic import Answer, Traffic

CANNED_TEXT = "Hello from flowproof doctor. This is a canned reply; no model was contacted."


class CannedBackend:
    def __init__(self, traffic: Traffic) -> None:
        self.traffic = traffic

    async def answer(
        self,
        dialect: Dialect,
        request: Any,
        headers: Mapping[str, str],
        *,
        method: str = "POST",
        route: Route | None = None,
    ) -> Answer:
        response = dialect.text_response(request, CANNED_TEXT)
        self.traffic.add(MODEL_LANE, Turn(dialect.name, request, response))
        return Answer(200, response)

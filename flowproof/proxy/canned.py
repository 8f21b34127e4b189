"""CannedBackend: answers every model call with one fixed text, for `flowproof doctor`.

Like replay it has no network client: doctor needs no key, no spec and no model.
"""

from __future__ import annotations

from flowproof.proxy.app import ModelCall
from flowproof.trace.model import Turn
from flowproof.traffic import Answer

CANNED_TEXT = "Hello from flowproof doctor. This is a canned reply; no model was contacted."


class CannedBackend:
    async def answer(self, call: ModelCall) -> Answer:
        dialect, request = call.dialect, call.body
        response = dialect.text_response(request, CANNED_TEXT)
        return Answer(200, response, turn=Turn(dialect.name, request, response))

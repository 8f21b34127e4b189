"""CannedBackend: answers the model calls of `flowproof doctor` without a model.

Like replay it has no network client: doctor needs no key, no spec and no model.

An agent that is answered a final text at once usually stops after one request, and then
doctor never sees what it adds from its second request on (tools it loads late, per-item
metadata, the shape of a tool result). So the first request that offers tools is answered with
a call to PROBE_TOOL, a tool the agent does NOT offer: the agent cannot run anything for it
(no file read, no command, nothing written or deleted), and most agents report the unknown
tool back to the model as an error result, which is their second request. Every other request,
that one included, gets CANNED_TEXT. A request that offers no tools, or a dialect with no way
to ask for a tool, gets the text at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowproof.live.traffic import Answer
from flowproof.proxy.backend import ModelCall
from flowproof.trace.model import Turn

CANNED_TEXT = "Hello from flowproof doctor. This is a canned reply; no model was contacted."
PROBE_TOOL = "flowproof_doctor_probe"
"""The tool doctor's first answer asks for: a name no agent offers, so nothing runs."""
PROBE_CALL_ID = "call_flowproof_doctor_probe"


@dataclass(slots=True)
class CannedBackend:
    probe: bool = True
    """Answer the first request that offers tools with a call to PROBE_TOOL."""
    served: int = 0
    """Model requests answered so far."""
    probed_at: int | None = None
    """Which model request (from 1) was answered with the call to PROBE_TOOL, if any."""

    async def answer(self, call: ModelCall) -> Answer:
        dialect, request = call.dialect, call.body
        self.served += 1
        response = self._probe(call) if self.probe and self.probed_at is None else None
        if response is not None:
            self.probed_at = self.served
        else:
            response = dialect.text_response(request, CANNED_TEXT)
        return Answer(200, response, turn=Turn(dialect.name, request, response))

    def _probe(self, call: ModelCall) -> object | None:
        offered = call.dialect.envelope(call.body).tools
        if not offered or PROBE_TOOL in offered:
            return None
        return call.dialect.tool_call_response(call.body, PROBE_TOOL, PROBE_CALL_ID)

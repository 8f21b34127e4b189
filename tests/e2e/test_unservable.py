"""A request the proxy cannot serve fails the flow, at replay and at record, even when the
agent copes with the 4xx and finishes every turn (it used to pass: "3 of 3 turns served").

The real openai-SDK agent does the whole booking, then sends one request outside its SDK: a body
that is not JSON, an empty body, a path no dialect serves, a GET on a model path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

UNSERVABLE = {
    "raw-not-json": "(400): POST /v1/chat/completions: the request body is not JSON",
    "raw-empty-body": "(400): POST /v1/chat/completions: the request body is empty",
    "raw-embeddings": (
        "(404): POST /v1/embeddings: no model API at /v1/embeddings; paths containing "
        "/api/chat, /chat/completions, /messages, /models/<model>:generateContent, "
        "/responses are served"
    ),
    "raw-get": "(405): GET /v1/chat/completions: GET is not a model call; use POST",
}
FLOW = "Booking assistant books a flight  (specs/booking.yaml)"


@pytest.mark.parametrize("bug", UNSERVABLE)
def test_an_unservable_request_fails_the_replay(recorded: Path, bug: str) -> None:
    write_spec(recorded, agent_env={"AGENT_BUG": bug})
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 1, result.output
    assert (
        f"FAIL  {FLOW} · 3 of 3 turns served\n"
        f"      request 4 could not be served {UNSERVABLE[bug]}\n"
    ) in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("bug", UNSERVABLE)
def test_an_unservable_request_fails_the_record_and_writes_no_trace(
    tmp_path: Path, upstream: ScriptedUpstream, bug: str
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, agent_env={"AGENT_BUG": bug})
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert (
        f"FAIL  {FLOW} · 3 turns recorded; no trace written\n"
        f"      request 4 could not be served {UNSERVABLE[bug]}\n"
    ) in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()
    assert len(upstream.received) == 3  # the unservable request never reached the upstream

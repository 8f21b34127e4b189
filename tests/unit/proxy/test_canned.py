"""doctor's canned backend: one call to a tool the agent does not offer, then text."""

from __future__ import annotations

import asyncio

import pytest

from flowproof.dialects.base import Dialect, dialect_named
from flowproof.proxy.backend import ModelCall
from flowproof.proxy.canned import CANNED_TEXT, PROBE_CALL_ID, PROBE_TOOL, CannedBackend

OFFERING = {
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {"name": "delete_everything", "parameters": {}}}],
}
NOT_OFFERING = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
ALL_DIALECTS = sorted(Dialect._registry)


def answer(backend: CannedBackend, body: dict) -> object:
    dialect = dialect_named("openai_chat")
    assert dialect is not None
    return asyncio.run(backend.answer(ModelCall(dialect, body, {}))).body


def test_the_first_request_offering_tools_gets_the_probe_and_every_other_one_text() -> None:
    backend = CannedBackend()
    chat = dialect_named("openai_chat")
    assert chat is not None
    first, second = answer(backend, OFFERING), answer(backend, OFFERING)
    # never a tool the agent offered: the probe cannot make it run anything
    assert chat.tool_calls(first) == [(PROBE_TOOL, "{}")]
    assert chat.tool_calls(second) == [] and chat.reply_text(second) == CANNED_TEXT
    assert backend.probed_at == 1


def test_a_request_without_tools_gets_text_and_the_probe_waits_for_one_with_tools() -> None:
    backend = CannedBackend()
    assert backend.probed_at is None
    assert answer(backend, NOT_OFFERING)["choices"][0]["message"]["content"] == CANNED_TEXT
    answer(backend, OFFERING)
    assert backend.probed_at == 2


def test_with_the_probe_off_every_request_gets_text() -> None:
    backend = CannedBackend(probe=False)
    assert answer(backend, OFFERING)["choices"][0]["message"]["content"] == CANNED_TEXT
    assert backend.probed_at is None


@pytest.mark.parametrize("name", ALL_DIALECTS)
def test_every_dialect_reads_back_its_own_probe_call_and_streams_it(name: str) -> None:
    dialect = dialect_named(name)
    assert dialect is not None
    response = dialect.tool_call_response({"model": "m"}, PROBE_TOOL, PROBE_CALL_ID)
    assert response is not None, f"{name} has no tool_call_response"
    assert dialect.tool_calls(response) == [(PROBE_TOOL, "{}")]
    frames = b"".join(dialect.render_stream({"model": "m", "stream": True}, response))
    assert PROBE_TOOL.encode() in frames

"""`record --keep-matching`: heal a trace by re-recording only the turns that changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, record, write_spec
from tests.upstream.scripted import ScriptedUpstream, text

pytestmark = pytest.mark.e2e


@pytest.fixture
def first(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    assert record(tmp_path, upstream).code == 0
    upstream.received.clear()
    return tmp_path


def test_only_the_changed_turn_reaches_the_model_and_the_rest_keep_their_bytes(
    first: Path, upstream: ScriptedUpstream
) -> None:
    trace = first / "specs" / "booking.trace.json"
    before = json.loads(trace.read_text())["lanes"]["model"]
    upstream.script = [text("Your flight KQ999 to Nairobi is booked: B-1042.")]
    write_spec(first, agent_env={"AGENT_BUG": "rewrite-flight-id"})  # turn 3 now differs
    healed = flowproof(
        "record",
        "specs",
        "--keep-matching",
        "--diff",
        cwd=first,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY},
    )
    assert healed.code == 0, healed.output
    assert len(upstream.received) == 1  # the changed third turn, and nothing else
    after = json.loads(trace.read_text())["lanes"]["model"]
    assert after[:2] == before[:2] and after[2] != before[2]
    assert "kept from the previous trace, unchanged: turns 1, 2" in healed.stderr
    changed_at = "messages[4].tool_calls[0].function.arguments: flight.id"
    assert f"re-recorded: turn 3 (the request changed at {changed_at})" in healed.stderr
    assert f'turn 3 request: {changed_at}: "KQ311" → "KQ999"' in healed.stderr
    assert "reply:" in healed.stderr and "KQ999" in healed.stderr


def test_a_failing_assertion_writes_nothing(first: Path, upstream: ScriptedUpstream) -> None:
    trace = first / "specs" / "booking.trace.json"
    before = trace.read_text()
    upstream.script = [text("Your flight KQ999 to Nairobi is booked: B-1042.")]
    write_spec(
        first,
        agent_env={"AGENT_BUG": "rewrite-flight-id"},
        extra_steps="  - assert: reply contains KQ311\n",
    )
    healed = flowproof(
        "record",
        "specs",
        "--keep-matching",
        cwd=first,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY},
    )
    assert healed.code == 1, healed.output
    assert trace.read_text() == before

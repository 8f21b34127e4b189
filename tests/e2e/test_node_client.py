"""Record and replay a Node agent on the npm `openai` SDK, through the real CLI.

The agent (tests/agents/node/booking_agent.mjs) is the Python booking agent ported to Node, so
these tests check flowproof against a second real client: its headers, its body key order, its
SSE parser and its retry rules. Three transports are covered: plain `create()`, the SDK's
streaming helper `chat.completions.stream()` (which adds `stream_options` and the
`X-Stainless-Helper-Method: stream` header) and a raw `create({stream: true})` whose deltas
the agent assembles itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, flowproof
from tests.e2e import booking
from tests.e2e.booking import BOOKING_SCRIPT, record
from tests.upstream.scripted import ScriptedUpstream

NODE_AGENTS = ROOT / "tests" / "agents" / "node"
AGENT = NODE_AGENTS / "booking_agent.mjs"

if shutil.which("node") is None:
    pytest.skip(
        "Node client tests need `node` (20 or later) on PATH; install Node, then `make install`",
        allow_module_level=True,
    )
if not (NODE_AGENTS / "node_modules" / "openai").is_dir():
    pytest.skip(
        f"Node client tests need the npm `openai` package in {NODE_AGENTS}/node_modules; "
        "run `make install` (it runs `npm ci --prefix tests/agents/node`)",
        allow_module_level=True,
    )

PLAIN = {}
HELPER = {"AGENT_STREAM": "1"}
RAW = {"AGENT_STREAM": "raw"}
TRANSPORTS = pytest.mark.parametrize(
    "transport", [PLAIN, HELPER, RAW], ids=["create", "stream-helper", "stream-raw"]
)
DIVERGENCE = (
    'messages[4].tool_calls[0].function.arguments: flight.id: recorded "KQ311", replayed "KQ999"'
)


def write_spec(directory: Path, agent_env: dict[str, str] | None = None) -> Path:
    return booking.write_spec(
        directory,
        agent_env=agent_env,
        command=f"node {AGENT}",
        title="Node booking assistant books a flight",
        extra_steps=(
            "  - assert_tool_call: search_flights where destination equals NBO\n"
            "  - assert_tool_call: create_booking where flight.id equals KQ311\n"
            "  - assert: reply contains booked\n"
        ),
    )


def record_with(tmp_path: Path, upstream: ScriptedUpstream, transport: dict[str, str]) -> None:
    """Record the booking flow over `transport`, then stop the upstream."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, transport)
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    upstream.stop()


@TRANSPORTS
def test_record_then_replay_with_the_upstream_stopped(
    tmp_path: Path, upstream: ScriptedUpstream, transport: dict[str, str]
) -> None:
    record_with(tmp_path, upstream, transport)
    # Record forwards every call non-streaming, whatever the client asked for.
    assert [r.path for r in upstream.received] == ["/v1/chat/completions"] * 3
    assert all("stream" not in r.body and "stream_options" not in r.body for r in upstream.received)
    trace = json.loads((tmp_path / "specs" / "booking.trace.json").read_text())
    assert len(trace["lanes"]["model"]) == 3
    assert list(trace["lanes"]["model"][0]["request"]) == ["model", "messages", "tools"]
    # The model was shown the mocked search result, not the agent's volatile one.
    assert trace["lanes"]["model"][1]["request"]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_search_flights",
        "content": '{"flights": [{"id": "KQ311", "dest": "NBO"}]}',
    }
    # The agent echoed the recorded tool call back byte for byte, over every transport.
    assert trace["lanes"]["model"][2]["request"]["messages"][4]["tool_calls"] == [
        {
            "id": "call_create_booking",
            "type": "function",
            "function": {
                "name": "create_booking",
                "arguments": '{"flight": {"id": "KQ311"}, "passenger": {"name": "Casey"}}',
            },
        }
    ]
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "PASS  Node booking assistant books a flight" in result.stderr
    assert "3 of 3 turns served" in result.stderr


@pytest.mark.parametrize(
    ("recorded_over", "replayed_over"),
    [(HELPER, PLAIN), (HELPER, RAW), (PLAIN, HELPER), (RAW, PLAIN)],
    ids=["helper-to-create", "helper-to-raw", "create-to-helper", "raw-to-create"],
)
def test_a_recording_replays_over_another_transport(
    tmp_path: Path,
    upstream: ScriptedUpstream,
    recorded_over: dict[str, str],
    replayed_over: dict[str, str],
) -> None:
    """`stream` and `stream_options` are transport, not content: switching between
    streaming and not must not change what the trace matches."""
    record_with(tmp_path, upstream, recorded_over)
    write_spec(tmp_path, replayed_over)
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr


@TRANSPORTS
def test_changed_tool_argument_is_a_field_level_divergence(
    tmp_path: Path, upstream: ScriptedUpstream, transport: dict[str, str]
) -> None:
    """The SDK gets a 400 with x-should-retry: false, throws BadRequestError without a retry
    and the agent exits 1; the verdict comes from flowproof's own record of the request."""
    record_with(tmp_path, upstream, transport)
    write_spec(tmp_path, {**transport, "AGENT_BUG": "rewrite-flight-id"})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "FAIL  Node booking assistant books a flight" in result.stderr
    assert "2 of 3 turns served" in result.stderr
    assert "request 3 matches no recorded turn (compared with recorded turn 3)" in result.stderr
    assert DIVERGENCE in result.stderr


def test_extra_model_call_is_a_divergence(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    record_with(tmp_path, upstream, PLAIN)
    write_spec(tmp_path, {"AGENT_BUG": "extra-call"})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert (
        "request 4 is an extra model call: all 3 recorded turns were already served"
        in result.stderr
    )


def test_upstream_error_at_record_is_not_retried_by_the_sdk(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """npm openai retries a 500 twice with backoff unless told x-should-retry: false."""
    upstream.fail_status = 500
    write_spec(tmp_path)
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert (
        f"the upstream answered 500 Internal Server Error to POST {upstream.base_url}/chat/completions at turn 1 (model request 1):"
        in result.stderr
    )
    assert len(upstream.received) == 1, "x-should-retry: false must stop the SDK's retries"
    assert not (tmp_path / "specs" / "booking.trace.json").exists()

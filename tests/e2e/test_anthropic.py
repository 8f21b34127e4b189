"""A real anthropic-SDK agent recorded against the scripted upstream, then replayed with no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from anthropic._constants import ANTHROPIC_API_VERSION

from tests.conftest import CliResult, agent_command, flowproof
from tests.e2e import booking
from tests.e2e.booking import BOOKING_SCRIPT, KEY, paths_sent, record
from tests.upstream.scripted import ScriptedUpstream

REPLY = "Your flight KQ311 to Nairobi is booked: B-1042."


def write_spec(directory: Path, agent_env: dict[str, str] | None = None, steps: str = "") -> Path:
    """The booking flow with the anthropic agent; `agent_env` switches streaming and bugs."""
    return booking.write_spec(
        directory,
        agent_env=agent_env,
        extra_steps=steps,
        command=agent_command("anthropic_agent.py"),
        title="Anthropic booking assistant books a flight",
    )


def streaming(on: bool) -> dict[str, str]:
    return {"AGENT_STREAM": "1"} if on else {}


def record_booking(directory: Path, upstream: ScriptedUpstream, **agent_env: str) -> CliResult:
    upstream.script = BOOKING_SCRIPT
    write_spec(directory, agent_env)
    return record(directory, upstream)


def trace_of(directory: Path) -> dict:
    return json.loads((directory / "specs" / "booking.trace.json").read_text())


@pytest.mark.parametrize(
    ("record_stream", "replay_stream"),
    [(False, False), (True, True), (False, True), (True, False)],
    ids=["json", "stream", "json-then-stream", "stream-then-json"],
)
def test_record_then_replay_with_the_upstream_stopped(
    tmp_path: Path, upstream: ScriptedUpstream, record_stream: bool, replay_stream: bool
) -> None:
    """Whether the agent streams is transport, not content: a trace recorded either way
    replays either way, because the SDK assembles the synthesized events into the same
    message and echoes the same blocks back."""
    result = record_booking(tmp_path, upstream, **streaming(record_stream))
    assert result.code == 0, result.output
    assert "3 turns recorded" in result.stderr
    upstream.stop()
    trace = trace_of(tmp_path)
    assert [turn["dialect"] for turn in trace["lanes"]["model"]] == ["anthropic_messages"] * 3
    assert all("stream" not in turn["request"] for turn in trace["lanes"]["model"])
    # The mocked search result, not the agent's volatile one, is what the model was shown.
    assert trace["lanes"]["model"][1]["request"]["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call_search_flights",
                "content": '{"flights": [{"id": "KQ311", "dest": "NBO"}]}',
            }
        ],
    }
    write_spec(tmp_path, streaming(replay_stream))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "PASS  Anthropic booking assistant books a flight" in result.stderr
    assert "3 of 3 turns served" in result.stderr


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_changed_tool_input_is_a_field_level_divergence(
    tmp_path: Path, upstream: ScriptedUpstream, stream: bool
) -> None:
    assert record_booking(tmp_path, upstream, **streaming(stream)).code == 0
    upstream.stop()
    write_spec(tmp_path, {"AGENT_BUG": "rewrite-flight-id", **streaming(stream)})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "request 3 matches no recorded turn (compared with recorded turn 3)" in result.stderr
    # `input` is an object on this API, so the path runs straight into it.
    assert (
        'messages[3].content[0].input.flight.id: recorded "KQ311", replayed "KQ999"'
        in result.stderr
    )
    assert "served 2 of 3 recorded turns" not in result.stderr, "the divergence is the reason"


ASSERTIONS = "".join(
    f"  - {line}\n"
    for line in (
        "assert_tool_call: search_flights where destination equals NBO and date matches ^2026-",
        "assert_tool_call: create_booking where flight.id equals KQ311 and passenger.name is Casey",
        "assert_no_tool_call: create_booking where flight.id equals KQ999",
        "assert: reply contains booked",
        "assert: reply is B-1042",
    )
)


def test_where_clauses_and_reply_assertions_pass_at_record_and_replay(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, steps=ASSERTIONS)
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    upstream.stop()
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output


def test_a_failing_assertion_quotes_the_input_in_its_canonical_form(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    assert record_booking(tmp_path, upstream).code == 0
    upstream.stop()
    write_spec(tmp_path, steps="  - assert_no_tool_call: create_booking\n")
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert (
        "assert_no_tool_call create_booking — the model asked for create_booking (call 2 of 2) "
        'with {"flight": {"id": "KQ311"}, "passenger": {"name": "Casey"}}'
    ) in result.stderr


def test_record_sends_x_api_key_and_the_agents_version_headers_and_stores_neither(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    paths = tmp_path / "paths.txt"
    result = record_booking(
        tmp_path, upstream, AGENT_BETA="tools-2099-01-01", AGENT_PATHS_FILE=str(paths)
    )
    assert result.code == 0, result.output
    # anthropic-python sends Authorization: Bearer <placeholder>; the upstream gets the real
    # key in x-api-key, and the agent's own credential goes nowhere.
    for received in upstream.received:
        headers = {name.lower(): value for name, value in received.headers.items()}
        assert headers["x-api-key"] == KEY
        assert "authorization" not in headers
        assert headers["anthropic-version"] == ANTHROPIC_API_VERSION
        assert headers["anthropic-beta"] == "tools-2099-01-01"
    assert [r.path for r in upstream.received] == ["/v1/messages"] * 3
    assert paths_sent(paths) == ["/v1/messages"] * 3
    written = (tmp_path / "specs" / "booking.trace.json").read_text()
    assert KEY not in written and "flowproof-placeholder-key" not in written
    for header in ("x-api-key", "authorization", "anthropic-version", "anthropic-beta"):
        assert header not in written.lower()


def test_a_base_url_with_v1_doubles_it_and_still_records_and_replays(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """Overriding ANTHROPIC_BASE_URL with the /v1 handle makes the SDK call /v1/v1/messages;
    the proxy routes on `/messages` and forwards to the upstream's own path."""
    paths = tmp_path / "paths.txt"
    agent_env = {"ANTHROPIC_BASE_URL": "${flowproof.proxy_url}", "AGENT_PATHS_FILE": str(paths)}
    result = record_booking(tmp_path, upstream, **agent_env)
    assert result.code == 0, result.output
    assert paths_sent(paths) == ["/v1/v1/messages"] * 3
    assert [r.path for r in upstream.received] == ["/v1/messages"] * 3
    upstream.stop()
    paths.unlink()
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr
    assert paths_sent(paths) == ["/v1/v1/messages"] * 3


def test_anthropic_base_url_in_flowproofs_environment_names_the_upstream_without_v1(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """With no FLOWPROOF_AGENT_UPSTREAM, record follows ANTHROPIC_BASE_URL the way the SDK
    does (no /v1 in it) and takes the key from ANTHROPIC_API_KEY; the agent still gets the
    proxy and the placeholder."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    origin = upstream.base_url.removesuffix("/v1")
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"ANTHROPIC_BASE_URL": origin, "ANTHROPIC_API_KEY": KEY},
    )
    assert result.code == 0, result.output
    assert [r.path for r in upstream.received] == ["/v1/messages"] * 3
    assert {r.headers.get("x-api-key") for r in upstream.received} == {KEY}
    assert KEY not in (tmp_path / "specs" / "booking.trace.json").read_text()

"""The real `ollama` Python client on Ollama's native /api/chat, recorded against the scripted
upstream (which, like Ollama, streams unless told not to), then replayed with no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliResult, agent_command, flowproof
from tests.e2e import booking
from tests.e2e.booking import BOOKING_SCRIPT, KEY, paths_sent, record
from tests.upstream.scripted import ScriptedUpstream

CHECKS = (
    "  - assert_tool_call: search_flights where destination equals NBO\n"
    "  - assert_tool_call: create_booking where flight.id equals KQ311 and passenger.name is Casey\n"
    "  - assert: reply contains B-1042\n"
)


def write_spec(directory: Path, agent_env: dict[str, str] | None = None) -> Path:
    return booking.write_spec(
        directory,
        agent_env=agent_env,
        command=agent_command("ollama_agent.py"),
        title="Ollama booking assistant books a flight",
        extra_steps=CHECKS,
    )


def streaming(on: bool) -> dict[str, str]:
    return {"AGENT_STREAM": "1"} if on else {}


def record_booking(directory: Path, upstream: ScriptedUpstream, **agent_env: str) -> CliResult:
    upstream.script = BOOKING_SCRIPT
    write_spec(directory, agent_env)
    return record(directory, upstream)


def turns_of(directory: Path) -> list[dict]:
    return json.loads((directory / "specs" / "booking.trace.json").read_text())["lanes"]["model"]


@pytest.mark.parametrize(
    ("record_stream", "replay_stream"),
    [(False, False), (True, True), (False, True), (True, False)],
    ids=["json", "stream", "json-then-stream", "stream-then-json"],
)
def test_ollama_records_then_replays_with_the_upstream_stopped(
    tmp_path: Path, upstream: ScriptedUpstream, record_stream: bool, replay_stream: bool
) -> None:
    paths = tmp_path / "paths.txt"
    result = record_booking(
        tmp_path, upstream, AGENT_PATHS_FILE=str(paths), **streaming(record_stream)
    )
    assert result.code == 0, result.output
    assert paths_sent(paths) == ["/api/chat"] * 3
    assert [r.path for r in upstream.received] == ["/api/chat"] * 3
    # Ollama streams unless told not to: record always asks for one whole answer.
    assert [r.body["stream"] for r in upstream.received] == [False] * 3
    upstream.stop()
    turns = turns_of(tmp_path)
    assert [turn["dialect"] for turn in turns] == ["ollama_chat"] * 3
    assert all("stream" not in turn["request"] for turn in turns)
    # The mocked search result, not the agent's volatile one, is what the model was shown.
    assert turns[1]["request"]["messages"][-1] == {
        "role": "tool",
        "content": '{"flights": [{"id": "KQ311", "dest": "NBO"}]}',
        "tool_name": "search_flights",
    }
    write_spec(tmp_path, streaming(replay_stream))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "PASS  Ollama booking assistant books a flight" in result.stderr
    assert "3 of 3 turns served" in result.stderr


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_ollama_changed_argument_is_a_field_level_divergence(
    tmp_path: Path, upstream: ScriptedUpstream, stream: bool
) -> None:
    assert record_booking(tmp_path, upstream, **streaming(stream)).code == 0
    upstream.stop()
    write_spec(tmp_path, {"AGENT_BUG": "rewrite-flight-id", **streaming(stream)})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "request 3 matches no recorded turn (compared with recorded turn 3)" in result.stderr
    assert (
        'messages[4].tool_calls[0].function.arguments.flight.id: recorded "KQ311", replayed "KQ999"'
    ) in result.stderr


def test_ollama_host_in_flowproofs_environment_names_the_upstream(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """OLLAMA_HOST is written as Ollama takes it, often with no scheme; a local Ollama needs
    no key, so none is sent when none is set."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    host = upstream.base_url.removesuffix("/v1").removeprefix("http://")
    result = flowproof("record", "specs", cwd=tmp_path, env={"OLLAMA_HOST": host})
    assert result.code == 0, result.output
    assert [r.path for r in upstream.received] == ["/api/chat"] * 3
    assert all("Authorization" not in r.headers for r in upstream.received)


def test_a_key_is_sent_as_bearer_and_stored_nowhere(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    assert record_booking(tmp_path, upstream).code == 0
    assert {r.headers.get("Authorization") for r in upstream.received} == {f"Bearer {KEY}"}
    assert KEY not in (tmp_path / "specs" / "booking.trace.json").read_text()

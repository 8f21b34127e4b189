"""The openai SDK's real `AzureOpenAI` client (and the plain client on Azure's v1 path)
recorded against the scripted upstream, then replayed with no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliResult, agent_command, flowproof
from tests.e2e import booking
from tests.e2e.booking import BOOKING_SCRIPT, KEY, paths_sent, record
from tests.upstream.scripted import ScriptedUpstream

DEPLOYMENT = "booking-gpt-4o"
VERSION = "api-version=2024-10-21"
CHECKS = (
    "  - assert_tool_call: create_booking where flight.id equals KQ311\n"
    "  - assert: reply contains B-1042\n"
)
CHANGED = 'flight.id: recorded "KQ311", replayed "KQ999"'


def write_spec(directory: Path, agent_env: dict[str, str] | None = None) -> Path:
    return booking.write_spec(
        directory,
        agent_env=agent_env,
        command=agent_command("azure_agent.py"),
        title="Azure booking assistant books a flight",
        extra_steps=CHECKS,
    )


def record_booking(directory: Path, upstream: ScriptedUpstream, **agent_env: str) -> CliResult:
    upstream.script = BOOKING_SCRIPT
    write_spec(directory, agent_env)
    return record(directory, upstream)


def turns_of(directory: Path) -> list[dict]:
    return json.loads((directory / "specs" / "booking.trace.json").read_text())["lanes"]["model"]


def assert_forwarded_with_api_key(upstream: ScriptedUpstream) -> None:
    for received in upstream.received:
        headers = {name.lower(): value for name, value in received.headers.items()}
        assert headers["api-key"] == KEY
        assert "authorization" not in headers


@pytest.mark.parametrize(
    ("record_stream", "replay_stream"),
    [(False, False), (True, True), (False, True)],
    ids=["json", "stream", "json-then-stream"],
)
def test_deployment_chat_records_then_replays_with_the_upstream_stopped(
    tmp_path: Path, upstream: ScriptedUpstream, record_stream: bool, replay_stream: bool
) -> None:
    paths = tmp_path / "paths.txt"
    stream = {"AGENT_STREAM": "1"} if record_stream else {}
    result = record_booking(tmp_path, upstream, AGENT_PATHS_FILE=str(paths), **stream)
    assert result.code == 0, result.output
    called = f"/openai/deployments/{DEPLOYMENT}/chat/completions"
    assert paths_sent(paths) == [f"{called}?{VERSION}"] * 3
    assert [(r.path, r.query) for r in upstream.received] == [(called, VERSION)] * 3
    assert all("deployment" not in r.body for r in upstream.received)
    assert_forwarded_with_api_key(upstream)
    upstream.stop()
    turns = turns_of(tmp_path)
    assert [turn["dialect"] for turn in turns] == ["azure_openai_chat"] * 3
    assert [next(iter(turn["request"])) for turn in turns] == ["deployment"] * 3
    assert {turn["request"]["deployment"] for turn in turns} == {DEPLOYMENT}
    written = (tmp_path / "specs" / "booking.trace.json").read_text()
    assert "flowproof-placeholder-key" not in written and "api-key" not in written
    write_spec(tmp_path, {"AGENT_STREAM": "1"} if replay_stream else {})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_deployment_chat_changed_argument_is_a_field_level_divergence(
    tmp_path: Path, upstream: ScriptedUpstream, stream: bool
) -> None:
    agent_stream = {"AGENT_STREAM": "1"} if stream else {}
    assert record_booking(tmp_path, upstream, **agent_stream).code == 0
    upstream.stop()
    write_spec(tmp_path, {"AGENT_BUG": "rewrite-flight-id", **agent_stream})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "request 3 matches no recorded turn (compared with recorded turn 3)" in result.stderr
    assert f"messages[4].tool_calls[0].function.arguments: {CHANGED}" in result.stderr


def test_another_deployment_is_a_divergence(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    """The deployment is the model Azure runs: it is matched, and named first."""
    assert record_booking(tmp_path, upstream).code == 0
    upstream.stop()
    write_spec(tmp_path, {"AGENT_DEPLOYMENT": "booking-gpt-5"})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert 'deployment: recorded "booking-gpt-4o", replayed "booking-gpt-5"' in result.stderr


@pytest.mark.parametrize(
    ("api", "dialect", "called"),
    [
        ("responses", "azure_openai_responses", f"/openai/responses?{VERSION}"),
        ("v1", "azure_openai_chat", "/openai/v1/chat/completions"),
    ],
)
def test_the_responses_and_v1_paths_record_replay_and_diverge(
    tmp_path: Path, upstream: ScriptedUpstream, api: str, dialect: str, called: str
) -> None:
    paths = tmp_path / "paths.txt"
    result = record_booking(tmp_path, upstream, AGENT_API=api, AGENT_PATHS_FILE=str(paths))
    assert result.code == 0, result.output
    assert paths_sent(paths) == [called] * 3
    path, _, query = called.partition("?")
    assert [(r.path, r.query) for r in upstream.received] == [(path, query)] * 3
    assert_forwarded_with_api_key(upstream)
    upstream.stop()
    turns = turns_of(tmp_path)
    assert [turn["dialect"] for turn in turns] == [dialect] * 3
    assert {turn["request"]["model"] for turn in turns} == {DEPLOYMENT}
    write_spec(tmp_path, {"AGENT_API": api})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr
    write_spec(tmp_path, {"AGENT_API": api, "AGENT_BUG": "rewrite-flight-id"})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert CHANGED in result.stderr


def test_azure_endpoint_and_key_in_flowproofs_environment_name_the_upstream(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    origin = upstream.base_url.removesuffix("/v1")
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"AZURE_OPENAI_ENDPOINT": origin, "AZURE_OPENAI_API_KEY": KEY},
    )
    assert result.code == 0, result.output
    assert [r.path for r in upstream.received] == [
        f"/openai/deployments/{DEPLOYMENT}/chat/completions"
    ] * 3
    assert_forwarded_with_api_key(upstream)
    assert KEY not in (tmp_path / "specs" / "booking.trace.json").read_text()


def test_record_without_an_endpoint_fails_and_names_the_variable(tmp_path: Path) -> None:
    write_spec(tmp_path)
    result = flowproof("record", "specs", cwd=tmp_path, env={"AZURE_OPENAI_API_KEY": KEY})
    assert result.code != 0, result.output
    assert (
        "record has no upstream for azure_openai_chat: set AZURE_OPENAI_ENDPOINT "
        "(or FLOWPROOF_AGENT_UPSTREAM) in flowproof's environment"
    ) in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()

"""The CLI contract: exit codes, spec errors, ${VAR} handling, path variants, streaming."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream


def test_malformed_spec_is_exit_2_with_file_and_line_and_other_flows_still_run(
    tmp_path: Path,
) -> None:
    write_spec(tmp_path)  # valid, but has no trace: a failed flow
    bad = tmp_path / "specs" / "broken.yaml"
    bad.write_text("name: x\napp: agent\nagent:\n  comand: ./run\nsteps:\n  - prompt: hi\n")
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2, result.output
    assert (
        "specs/broken.yaml:4: unknown key 'comand' in agent; did you mean 'command'?"
        in result.stderr
    )
    assert "FAIL  Booking assistant books a flight" in result.stderr


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = flowproof("run", "nowhere", cwd=tmp_path)
    assert result.code == 2
    assert "error: nowhere: no such file or directory" in result.stderr


def test_suite_settings_file_is_not_a_spec(tmp_path: Path) -> None:
    write_spec(tmp_path)
    (tmp_path / "specs" / "flowproof.yaml").write_text("env: {}\n")
    result = flowproof("run", "specs", cwd=tmp_path)
    assert "1 flow\n" in result.stderr


def test_env_values_are_not_part_of_the_trace(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    """A trace pins the traffic, not the environment: a different ${VAR} still replays."""
    upstream.script = BOOKING_SCRIPT
    env = {"AGENT_SETTING": "${DEPLOY_REGION}", "AGENT_ECHO_SETTING": "1"}
    write_spec(tmp_path, agent_env=env)
    assert record(tmp_path, upstream, DEPLOY_REGION="eu-west-1").code == 0
    assert "eu-west-1" not in (tmp_path / "specs" / "booking.trace.json").read_text()
    assert flowproof("run", "specs", cwd=tmp_path, env={"DEPLOY_REGION": "us-east-2"}).code == 0
    unset = flowproof("run", "specs", cwd=tmp_path)
    assert unset.code == 2
    assert "${DEPLOY_REGION} is used by the spec but is not set in the environment" in unset.stderr


def test_doubled_v1_still_reaches_the_proxy(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, agent_env={"OPENAI_BASE_URL": "${flowproof.proxy_url}/v1"})
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    assert flowproof("run", "specs", cwd=tmp_path).code == 0


def test_a_streaming_client_records_and_replays(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    """stream: true in the body (the SDK sends Accept: application/json regardless) gets SSE;
    record forwards non-streaming, so a non-streaming replay matches the same trace."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, agent_env={"AGENT_STREAM": "1"})
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    assert all("stream" not in r.body for r in upstream.received)
    assert flowproof("run", "specs", cwd=tmp_path).code == 0
    write_spec(tmp_path)  # the same agent, not streaming, against the streamed recording
    assert flowproof("run", "specs", cwd=tmp_path).code == 0

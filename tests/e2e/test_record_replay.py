"""Record a real openai-SDK agent against the scripted upstream, then replay it with no model."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, record, write_spec
from tests.upstream.scripted import ScriptedUpstream


def test_record_then_replay_with_the_upstream_stopped(recorded: Path) -> None:
    trace = json.loads((recorded / "specs" / "booking.trace.json").read_text())
    assert trace["format_version"] == 5 and len(trace["lanes"]["model"]) == 3
    # The mocked search result, not the agent's volatile one, is what the model was shown.
    tool_message = trace["lanes"]["model"][1]["request"]["messages"][-1]
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "call_search_flights",
        "content": '{"flights": [{"id": "KQ311", "dest": "NBO"}]}',
    }
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 0, result.output
    assert "PASS  Booking assistant books a flight" in result.stderr
    assert "3 of 3 turns served" in result.stderr


def test_record_forwards_the_key_in_authorization_and_never_stores_it(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    assert record(tmp_path, upstream).code == 0
    assert [r.headers.get("Authorization") for r in upstream.received] == [f"Bearer {KEY}"] * 3
    assert all(r.path == "/v1/chat/completions" for r in upstream.received)
    trace_text = (tmp_path / "specs" / "booking.trace.json").read_text()
    assert KEY not in trace_text and "Authorization" not in trace_text
    assert "flowproof-placeholder-key" not in trace_text


def test_replay_runs_with_no_network_at_all(recorded: Path) -> None:
    """Inside a fresh network namespace only loopback exists: the kernel proves replay
    contacts nothing."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root to create a network namespace")
    prefix = (
        "unshare",
        "-n",
        "sh",
        "-c",
        'ip link set lo up 2>/dev/null || ifconfig lo up; exec "$@"',
        "sh",
    )
    result = flowproof("run", "specs", cwd=recorded, prefix=prefix)
    assert result.code == 0, result.output


def test_changed_tool_argument_is_a_field_level_divergence(recorded: Path) -> None:
    write_spec(recorded, agent_env={"AGENT_BUG": "rewrite-flight-id"})
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 1, result.output
    assert "request 3 matches no recorded turn (compared with recorded turn 3)" in result.stderr
    assert (
        'messages[4].tool_calls[0].function.arguments: flight.id: recorded "KQ311", '
        'replayed "KQ999"'
    ) in result.stderr


def test_extra_model_call_is_a_divergence(recorded: Path) -> None:
    write_spec(recorded, agent_env={"AGENT_BUG": "extra-call"})
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 1, result.output
    assert (
        "request 4 is an extra model call: all 3 recorded turns were already served"
        in result.stderr
    )


def test_missing_calls_leave_turns_unserved(recorded: Path) -> None:
    write_spec(recorded, agent_env={"AGENT_BUG": "stop-after-first-tool"})
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 1, result.output
    assert "served 1 of 3 recorded turns" in result.stderr


def test_agent_that_crashes_is_reported_with_exit_code_and_stderr(recorded: Path) -> None:
    write_spec(recorded, agent_env={"AGENT_BUG": "crash"})
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 1, result.output
    assert "the agent exited with code 1 before making any model request" in result.stderr
    assert "RuntimeError: agent failed to load its configuration" in result.stderr


def test_agent_that_never_contacts_the_proxy_fails_record_with_no_trace(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    write_spec(tmp_path, agent_env={"AGENT_BUG": "no-model"})
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert "the agent made no model requests to flowproof's proxy" in result.stderr
    assert "OPENAI_BASE_URL" in result.stderr and "${flowproof.proxy_url}" in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()
    assert upstream.received == []


def test_agent_that_hangs_is_stopped_with_its_children(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    pidfile = tmp_path / "child.pid"
    # The timeout leaves room for the agent to import its SDK and write the pid file even on a
    # loaded machine (at 2 s the pid file was sometimes never written: a flaky test).
    write_spec(tmp_path, agent_env={"AGENT_BUG": "hang", "AGENT_PIDFILE": str(pidfile)}, timeout=8)
    started = time.monotonic()
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert time.monotonic() - started < 30
    assert "the agent was still running after its timeout of 8s" in result.stderr
    assert not _running(int(pidfile.read_text())), "the agent's child outlived the timeout"
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


def test_upstream_error_at_record_is_reported_and_writes_no_trace(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.fail_status = 500
    write_spec(tmp_path)
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert (
        f"the upstream answered 500 Internal Server Error to POST {upstream.base_url}/chat/completions at turn 1 (model request 1):"
        in result.stderr
    )
    assert "scripted upstream failure" in result.stderr
    assert len(upstream.received) == 1, "x-should-retry: false must stop the SDK's retries"
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


def test_run_without_a_trace_fails_and_tells_the_user_to_record(tmp_path: Path) -> None:
    write_spec(tmp_path)
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1
    assert (
        "no trace at specs/booking.trace.json; run `flowproof record specs/booking.yaml` first"
        in result.stderr
    )


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie lingers until init reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_replay_refuses_a_trace_that_holds_the_record_key(recorded: Path) -> None:
    """A hand-edited or old trace carrying a credential is a configuration error (exit 2)."""
    trace = recorded / "specs" / "booking.trace.json"
    trace.write_text(trace.read_text().replace("Book me a flight", f"Book me a flight {KEY}"))
    result = flowproof("run", "specs", cwd=recorded, env={"OPENAI_API_KEY": KEY})
    assert result.code == 2
    assert "holds the value of OPENAI_API_KEY; delete it and re-record" in result.stderr
    assert KEY not in result.stderr


def test_a_renamed_argument_divergence_names_the_old_key_and_the_new_one(recorded: Path) -> None:
    write_spec(recorded, agent_env={"AGENT_BUG": "rename-argument"})
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 1, result.output
    at = "messages[2].tool_calls[0].function.arguments"
    gone = f'{at}: destination: recorded "NBO", replayed (absent)'
    new = f'{at}: location: recorded (absent), replayed "NBO"'
    assert gone in result.stderr and new in result.stderr
    reports = (recorded / ".flowproof" / "runs").glob("*/report.json")
    report = max(reports, key=lambda path: path.stat().st_mtime)  # this run's, not the record's
    divergence = json.loads(report.read_text())["flows"][0]["divergence"]
    assert [d["path"] for d in divergence["differences"]] == [
        f"{at}: destination",
        f"{at}: location",
    ]
    assert divergence["more_differences"] == 0
    assert gone in divergence["text"] and new in divergence["text"]

"""`flowproof doctor`, `record --diff`, `flowproof diff`, and the uncovered-tool warning."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import agent_command, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

AGENT = agent_command("openai_chat_agent.py")


def test_doctor_counts_the_requests_of_a_wired_agent(tmp_path: Path) -> None:
    result = flowproof("doctor", "--agent", AGENT, cwd=tmp_path)
    assert result.code == 0, result.output
    assert "1 model request arrived at flowproof's proxy" in result.stderr
    assert "1 × POST /v1/chat/completions  →  openai_chat" in result.stderr
    assert "The agent exited with code 0." in result.stderr


def test_doctor_names_the_variables_when_nothing_arrives(tmp_path: Path) -> None:
    result = flowproof(
        "doctor",
        "--agent",
        f"AGENT_BUG=hardcoded-base-url {AGENT}",
        "--timeout",
        "30",
        cwd=tmp_path,
    )
    assert result.code == 1, result.output
    assert "0 model requests arrived at flowproof's proxy" in result.stderr
    assert "OPENAI_BASE_URL, OPENAI_API_BASE, OPENAI_BASE, FLOWPROOF_LLM_PROXY" in result.stderr
    assert "${flowproof.proxy_url}" in result.stderr
    assert "The agent exited with code 1." in result.stderr


def test_doctor_reports_paths_it_does_not_serve(tmp_path: Path) -> None:
    command = (
        'python3 -c "import os,urllib.request as u;'
        "u.urlopen(u.Request(os.environ['OPENAI_BASE_URL']+'/embeddings',data=b'{}'))\""
    )
    result = flowproof("doctor", "--agent", command, cwd=tmp_path)
    assert "1 × POST /v1/embeddings  →  not a model API flowproof serves (404)" in result.stderr


def test_mocked_tool_without_an_intercept_is_warned_about_at_record_and_replay(
    recorded: Path,
) -> None:
    warning = (
        "warning: tool search_flights is mocked at the model boundary only: the agent "
        "still ran it for real"
    )
    result = flowproof("run", "specs", cwd=recorded)
    assert warning in result.stderr
    spec = write_spec(recorded)
    spec.write_text(
        spec.read_text().replace("    result: { flights: [ { id: KQ311, dest: NBO } ] }\n", "")
    )
    assert warning not in flowproof("run", "specs", cwd=recorded).stderr  # declaration only


VISA_SCRIPT = [
    calls(tool_call("search_flights", {"destination": "NBO", "date": "2026-12-01"})),
    calls(tool_call("check_visa", {"country": "KE"})),
    calls(
        tool_call("create_booking", {"flight": {"id": "KQ311"}, "passenger": {"name": "Casey Lee"}})
    ),
    text("Your flight KQ311 to Nairobi is booked: B-1042."),
]


def test_rerecord_with_diff_prints_the_added_call_and_changed_argument(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    first = record(tmp_path, upstream)
    assert first.code == 0, first.output
    old_copy = tmp_path / "old.trace.json"
    shutil.copy(tmp_path / "specs" / "booking.trace.json", old_copy)

    upstream.received.clear()
    upstream.script = VISA_SCRIPT
    write_spec(tmp_path, agent_env={"AGENT_VISA": "1"})
    result = record(tmp_path, upstream, **{})  # plain record first: prints no diff
    assert "diff" not in result.stderr
    shutil.copy(old_copy, tmp_path / "specs" / "booking.trace.json")
    upstream.received.clear()
    result = flowproof(
        "record",
        "--diff",
        "specs",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url},
    )
    assert result.code == 0, result.output
    assert (
        "tool calls: previously search_flights → create_booking; now search_flights → "
        "check_visa → create_booking (now also calls check_visa)"
    ) in result.stderr
    assert (
        'create_booking (call 3) arguments: passenger.name: "Casey" → "Casey Lee"' in result.stderr
    )
    assert "tools offered: added check_visa" in result.stderr

    same = flowproof("diff", str(old_copy), str(old_copy), cwd=tmp_path)
    assert same.code == 0 and "no trajectory changes" in same.stderr
    changed = flowproof("diff", str(old_copy), "specs/booking.trace.json", cwd=tmp_path)
    assert changed.code == 1
    assert "now also calls check_visa" in changed.stderr


def test_rerecord_with_diff_names_a_changed_request_the_answers_did_not_show(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    assert record(tmp_path, upstream).code == 0
    upstream.received.clear()
    upstream.script = BOOKING_SCRIPT
    # The model answers as before: only what the agent puts back into the history changed.
    write_spec(tmp_path, agent_env={"AGENT_BUG": "lowercase-flight-id"})
    result = flowproof(
        "record",
        "--diff",
        "specs",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url},
    )
    assert result.code == 0, result.output
    assert "no trajectory changes" not in result.stderr
    changed_at = "messages[4].tool_calls[0].function.arguments: flight.id"
    changed = f'turn 3 request: {changed_at}: "KQ311" → "kq311"'
    assert f"- {changed}" in result.stderr
    assert "turn 1 request" not in result.stderr and "turn 2 request" not in result.stderr
    # The pull-request comment of the record run shows a reviewer the same change.
    assert flowproof("report", "--markdown", "comment.md", cwd=tmp_path).code == 0
    comment = (tmp_path / "comment.md").read_text()
    assert "Changed against the previous traces" in comment
    assert changed in comment


def test_a_failing_rerecord_keeps_the_previous_trace_and_prints_no_diff(
    recorded: Path, upstream: ScriptedUpstream
) -> None:
    before = (recorded / "specs" / "booking.trace.json").read_bytes()
    write_spec(recorded, extra_steps="  - assert: reply contains cancelled\n")
    result = flowproof(
        "record",
        "--diff",
        "specs",
        cwd=recorded,
        env={"FLOWPROOF_AGENT_UPSTREAM": "http://127.0.0.1:9/v1"},
    )
    assert result.code == 1
    assert "diff" not in result.stderr
    assert (recorded / "specs" / "booking.trace.json").read_bytes() == before


def test_doctor_answers_an_anthropic_agent_in_its_own_dialect(tmp_path: Path) -> None:
    result = flowproof("doctor", "--agent", agent_command("anthropic_agent.py"), cwd=tmp_path)
    assert result.code == 0, result.output
    assert "1 × POST /v1/messages  →  anthropic_messages" in result.stderr
    assert "The agent exited with code 0." in result.stderr


def test_doctor_answers_an_openai_agents_agent_over_responses(tmp_path: Path) -> None:
    command = f"OPENAI_AGENTS_DISABLE_TRACING=1 {agent_command('agents_sdk_agent.py')}"
    result = flowproof("doctor", "--agent", command, cwd=tmp_path)
    assert result.code == 0, result.output
    assert "POST /v1/responses  →  openai_responses" in result.stderr

"""Concurrent model calls: served by content, whichever arrives first; the reply comes from
the conversation the flow is about, not from the side call that happened to finish last."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.conftest import agent_command, flowproof
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call


def concurrent_model(body: dict) -> dict:
    system = body["messages"][0]["content"]
    if system.startswith("Name this session"):
        return text("Nairobi booking session")
    answered = sum(1 for m in body["messages"] if m["role"] == "tool")
    if answered == 0:
        return calls(tool_call("search_flights", {"destination": "NBO"}))
    if answered == 1:
        return calls(tool_call("create_booking", {"flight": {"id": "KQ311"}}))
    return text("Booked KQ311 to Nairobi.")


SPEC = f"""\
name: Concurrent title and task
app: agent
agent:
  command: "{agent_command("concurrent_agent.py")}"
tools:
  - name: search_flights
  - name: create_booking
steps:
  - prompt: Book me a flight to Nairobi
  - assert_tool_call: search_flights
  - assert_tool_call: create_booking where flight.id equals KQ311
  - assert: reply contains Booked KQ311
"""


def record(tmp_path: Path, upstream: ScriptedUpstream, spec: str = SPEC) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "concurrent.yaml").write_text(textwrap.dedent(spec))
    upstream.script = [concurrent_model] * 8
    result = flowproof(
        "record", "specs", cwd=tmp_path, env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url}
    )
    assert result.code == 0, result.output
    assert "4 turns recorded" in result.stderr


def test_two_concurrent_calls_replay_twenty_times_in_a_row(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.delay = 0.3  # the title and the first task call are in flight together
    record(tmp_path, upstream)
    upstream.stop()
    for attempt in range(20):
        replay = flowproof("run", "specs", cwd=tmp_path)
        assert replay.code == 0, f"replay {attempt + 1}: {replay.output}"
        assert "4 of 4 turns served" in replay.stderr


def test_a_side_call_that_lands_last_is_not_the_reply(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """The title call's answer is the LAST assistant message in arrival order; the reply is
    still the task's, because the task thread has more turns."""
    spec = SPEC.replace("  command:", "  env: { AGENT_TITLE_DELAY: '1.5' }\n  command:")
    record(tmp_path, upstream, spec)
    trace = (tmp_path / "specs" / "concurrent.trace.json").read_text()
    assert trace.rindex("Nairobi booking session") > trace.rindex("Booked KQ311")
    upstream.stop()
    assert flowproof("run", "specs", cwd=tmp_path).code == 0
    wrong = spec.replace("reply contains Booked KQ311", "reply contains booking session")
    (tmp_path / "specs" / "concurrent.yaml").write_text(textwrap.dedent(wrong))
    replay = flowproof("run", "specs", cwd=tmp_path)
    assert replay.code == 1
    assert 'the reply was "Booked KQ311 to Nairobi."' in replay.stderr

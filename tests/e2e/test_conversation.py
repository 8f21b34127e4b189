"""A two-turn conversation with a real openai-SDK agent that reads its second turn from stdin:
recorded against the scripted upstream, replayed with no model, and the ways it can change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliResult, agent_command, flowproof
from tests.e2e.booking import KEY, record
from tests.e2e.test_url_and_suite import free_port, start_service
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

SCRIPT = [
    calls(tool_call("search_flights", {"destination": "NBO", "date": "2026-12-01"})),
    text("KQ311 leaves at 09:00. Shall I book it?"),
    calls(tool_call("create_booking", {"flight": {"id": "KQ311"}, "passenger": {"name": "Casey"}})),
    text("Booked: B-1042."),
]


TURN_2_CALL_IN_TURN_1 = "- assert_tool_call: create_booking where flight.id equals KQ311"


def write_spec(
    directory: Path,
    *,
    bug: str = "",
    turn_one: str = "",
    flow_wide: str = "",
    timeout: float = 300,
) -> None:
    """The travel flow; `turn_one`: one more step for turn 1, written as it would be under
    `steps:` at the top level (`- assert_tool_call: ...`)."""
    spec = textwrap.dedent(f"""\
        name: Travel assistant searches, then books when asked
        app: agent
        agent:
          command: "{agent_command("conversation_agent.py")}"
          env: {{AGENT_BUG: "{bug}"}}
          timeout: {timeout}
        tools:
          - name: search_flights
            result: {{ flights: [ {{ id: KQ311, dest: NBO }} ] }}
          - name: create_booking
            result: {{ booking: B-1042 }}
        steps:
          - conversation:
              - user: Find me a flight to Nairobi tomorrow
                steps:
                  - assert_tool_call: search_flights where destination equals NBO
                  - assert_no_tool_call: create_booking
                  - assert: reply contains Shall I book it
                  {turn_one}
              - user: Yes, book it for Casey
                steps:
                  - assert_tool_call: create_booking where flight.id equals KQ311
                  - assert_no_tool_call: search_flights
                  - assert: reply contains B-1042
          - assert_tool_call: search_flights
          - assert_tool_call: create_booking
          {flow_wide}
        """)
    spec = "\n".join(line for line in spec.splitlines() if line.strip()) + "\n"
    path = directory / "specs" / "travel.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec)


def upstream_env(upstream: ScriptedUpstream) -> dict[str, str]:
    return {"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY}


def run(directory: Path) -> CliResult:
    return flowproof("run", "specs", cwd=directory)


@pytest.fixture
def conversation(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    upstream.script = list(SCRIPT)
    write_spec(tmp_path)
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    upstream.stop()
    return tmp_path


def test_a_two_turn_conversation_records_and_replays(conversation: Path) -> None:
    trace = json.loads((conversation / "specs" / "travel.trace.json").read_text())
    assert trace["format_version"] == 6
    turns = [turn["conversation_turn"] for turn in trace["lanes"]["model"]]
    assert turns == [1, 1, 2, 2]
    # Turn 2's first request carries turn 1 and the line the agent read from its stdin.
    messages = trace["lanes"]["model"][2]["request"]["messages"]
    assert messages[-1] == {"role": "user", "content": "Yes, book it for Casey"}
    assert messages[-2] == {
        "role": "assistant",
        "content": "KQ311 leaves at 09:00. Shall I book it?",
    }
    result = run(conversation)
    assert result.code == 0, result.output
    assert "4 of 4 turns served" in result.stderr
    first = 'turn 1 · 2 requests · 3 of 3 steps passed · "Find me a flight to Nairobi tomorrow"'
    second = 'turn 2 · 2 requests · 3 of 3 steps passed · "Yes, book it for Casey"'
    assert first in result.stderr and second in result.stderr


def test_the_reports_group_steps_and_trajectory_by_turn(conversation: Path) -> None:
    # A failing flow, so that the markdown shows its steps and trajectory.
    write_spec(conversation, turn_one=TURN_2_CALL_IN_TURN_1)
    assert run(conversation).code == 1
    reports = flowproof(
        "report", "--markdown", "r.md", "--junit", "r.xml", "--html", "r.html", cwd=conversation
    )
    assert reports.code == 0, reports.output
    markdown = (conversation / "r.md").read_text()
    headings = [line for line in markdown.splitlines() if line.startswith("**turn ")]
    assert [line.split(" · ")[0] for line in headings] == ["**turn 1", "**turn 2"]
    # Turn 2's trajectory holds the booking and its reply, and nothing of turn 1.
    turn_2 = markdown.split("\n**turn 2", 1)[1].split("</details>", 1)[0]
    assert "`create_booking`" in turn_2 and "`search_flights`" not in turn_2
    assert "says `Booked: B-1042.`" in turn_2
    junit = (conversation / "r.xml").read_text()
    assert "turn 1 · 2 requests · 3 of 4 steps passed" in junit
    assert "turn 2 · 2 requests · 3 of 3 steps passed" in junit
    html = (conversation / "r.html").read_text()
    assert html.index("User · turn 1") < html.index("User · turn 2")
    assert html.count('class="turn-heading"') == 3  # turn 1, turn 2, the whole conversation


def test_a_different_tool_argument_in_turn_2_fails_naming_turn_2(conversation: Path) -> None:
    write_spec(conversation, bug="turn-2-argument")
    result = run(conversation)
    assert result.code == 1, result.output
    assert "turn 2, request 2 (request 4 of the flow) matches no recorded request of turn 2" in (
        result.stderr
    )
    assert 'flight.id: recorded "KQ311", replayed "KQ999"' in result.stderr


def test_an_extra_request_in_turn_2_is_a_conversation_shape_change(conversation: Path) -> None:
    write_spec(conversation, bug="extra-call")
    result = run(conversation)
    assert result.code == 1, result.output
    assert "conversation shape changed at turn 2: recorded 2 requests, replayed 3" in (
        result.stderr
    )


def test_an_agent_waiting_for_its_next_turn_too_early_times_out_saying_so(
    conversation: Path,
) -> None:
    write_spec(conversation, bug="reads-too-early", timeout=2)
    result = run(conversation)
    assert result.code == 1, result.output
    assert (
        "the agent was still running after its timeout of 2s; flowproof stopped it and every "
        "process it started; flowproof was still waiting for conversation turn 1's reply (a "
        "model response with no tool call) before writing turn 2 on the agent's stdin"
    ) in " ".join(result.stderr.split())


def test_a_trace_of_another_number_of_turns_is_not_replayed(conversation: Path) -> None:
    spec = conversation / "specs" / "travel.yaml"
    text = spec.read_text()
    third = "      - user: Thank you\n  - assert_tool_call: search_flights\n"
    spec.write_text(text.replace("  - assert_tool_call: search_flights\n", third, 1))
    result = run(conversation)
    assert result.code == 1, result.output
    assert (
        "travel.trace.json was recorded with 2 conversation turns and the flow now has 3 "
        "conversation turns; run `flowproof record specs/travel.yaml` again"
    ) in result.stderr


def test_record_verify_replays_a_conversation_elsewhere(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = list(SCRIPT)
    write_spec(tmp_path)
    result = flowproof("record", "specs", "--verify", cwd=tmp_path, env=upstream_env(upstream))
    assert result.code == 0, result.output
    assert "no upstream: it replays" in result.stderr


def test_an_agent_that_exits_before_turn_2_fails_naming_the_turn(conversation: Path) -> None:
    write_spec(conversation, bug="one-turn")
    result = run(conversation)
    assert result.code == 1, result.output
    assert "the agent ended without answering conversation turn 2" in result.stderr
    assert flowproof("report", "--html", "r.html", cwd=conversation).code == 0
    html = (conversation / "r.html").read_text()
    assert "User · turn 2 · no model request served in it" in html


def test_an_agent_that_exits_before_turn_2_fails_its_record_too(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = list(SCRIPT)
    write_spec(tmp_path, bug="one-turn")
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert "the agent ended without answering conversation turn 2" in result.stderr
    assert not (tmp_path / "specs" / "travel.trace.json").exists()


def test_a_turn_1_step_does_not_see_turn_2s_calls(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = list(SCRIPT)
    write_spec(tmp_path, turn_one=TURN_2_CALL_IN_TURN_1)
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    reasons = [line.strip() for line in result.stderr.splitlines() if "step " in line]
    assert reasons == [
        "step 5 (turn 1, travel.yaml:19): assert_tool_call create_booking where flight.id "
        "equals KQ311 — create_booking was never called; the calls were: search_flights"
    ]


def test_keep_matching_re_records_only_the_turn_that_changed(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = list(SCRIPT)
    write_spec(tmp_path)
    assert record(tmp_path, upstream).code == 0
    trace = tmp_path / "specs" / "travel.trace.json"
    before = json.loads(trace.read_text())["lanes"]["model"]
    received = len(upstream.received)
    upstream.script = [*SCRIPT, text("Booked: B-1042.")]  # the n-th request, the n-th step
    write_spec(tmp_path, bug="turn-2-argument")  # turn 2's second request now differs
    healed = flowproof(
        "record", "specs", "--keep-matching", cwd=tmp_path, env=upstream_env(upstream)
    )
    assert healed.code == 0, healed.output
    assert len(upstream.received) == received + 1  # that request, and nothing else
    after = json.loads(trace.read_text())["lanes"]["model"]
    assert after[:3] == before[:3] and after[3] != before[3]
    assert [turn["conversation_turn"] for turn in after] == [1, 1, 2, 2]


def test_a_contained_agent_reads_its_turns_too(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    """Under egress containment the agent is started through the seccomp trampoline, which
    hands it the stdin its later turns are written to."""
    upstream.script = list(SCRIPT)
    write_spec(tmp_path, flow_wide="- assert_no_egress")
    recorded = record(tmp_path, upstream)
    if "not contained" in recorded.stderr:
        pytest.skip("egress containment is not available here")
    assert recorded.code == 0, recorded.output
    assert "containment: contained (linux seccomp)" in recorded.stderr
    upstream.stop()
    replayed = run(tmp_path)
    assert replayed.code == 0, replayed.output
    assert "turn 2 · 2 requests · 3 of 3 steps passed" in replayed.stderr


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("task", ""),  # flowproof's own shape: prompt, conversation_id, turn
        ("chat", 'body: {input: {text: "{{prompt}}"}, session: "{{conversation_id}}"}'),
    ],
)
def test_a_url_service_is_sent_one_post_per_turn(
    tmp_path: Path, upstream: ScriptedUpstream, route: str, body: str
) -> None:
    proxy_port = free_port()
    process, port = start_service(proxy_port)
    try:
        spec = textwrap.dedent(f"""\
            name: A travel service holds a conversation
            app: agent
            agent:
              url: http://127.0.0.1:{port}/{route}
              proxy_port: {proxy_port}
              {body}
            tools:
              - name: search_flights
              - name: create_booking
            steps:
              - conversation:
                  - user: Find me a flight to Nairobi tomorrow
                    steps:
                      - assert_tool_call: search_flights where destination equals NBO
                      - assert_no_tool_call: create_booking
                  - user: Yes, book it for Casey
                    steps:
                      - assert_tool_call: create_booking where flight.id equals KQ311
                      - assert: reply contains B-1042
            """)
        (tmp_path / "specs").mkdir()
        (tmp_path / "specs" / "service.yaml").write_text(spec)
        upstream.script = list(SCRIPT)
        recorded = record(tmp_path, upstream)
        assert recorded.code == 0, recorded.output
        upstream.stop()
        trace = json.loads((tmp_path / "specs" / "service.trace.json").read_text())
        turns = trace["lanes"]["model"]
        assert [turn["conversation_turn"] for turn in turns] == [1, 1, 2, 2]
        # The service kept the conversation by its id: turn 2 carries turn 1's exchange.
        assert turns[2]["request"]["messages"][-1] == {
            "role": "user",
            "content": "Yes, book it for Casey",
        }
        assert len(turns[2]["request"]["messages"]) == 6
        replayed = run(tmp_path)
        assert replayed.code == 0, replayed.output
        assert "4 of 4 turns served" in replayed.stderr
    finally:
        process.kill()
        process.wait()


IN_PROCESS = """\
import sys
from openai import OpenAI
from flowproof.engine.outcome import Mode
from flowproof.doors.inprocess import in_process_flow

mode = Mode.RECORD if sys.argv[1] == "record" else Mode.REPLAY
with in_process_flow("specs/chat.yaml", mode) as flow:
    client = OpenAI(max_retries=0)
    messages = []
    for text in flow.turns:  # the agent answers each turn through to the model's reply
        messages.append({"role": "user", "content": text})
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
print("turns:", list(flow.turns), "passed:", flow.outcome.passed)
"""
CHAT_SPEC = """\
name: An in-process agent holds a conversation
app: agent
agent:
  command: "true"
steps:
  - conversation:
      - user: Hello
        steps:
          - assert: reply contains first answer
      - user: And then?
        steps:
          - assert: reply contains second answer
"""


def test_an_in_process_agent_answers_the_turns_it_is_given(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "chat.yaml").write_text(CHAT_SPEC)
    (tmp_path / "agent.py").write_text(IN_PROCESS)
    upstream.script = [text("The first answer."), text("The second answer.")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **upstream_env(upstream)}
    for mode in ("record", "replay"):
        done = subprocess.run(
            [sys.executable, "agent.py", mode],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "turns: ['Hello', 'And then?'] passed: True" in done.stdout
        if mode == "record":
            upstream.stop()
            trace = json.loads((tmp_path / "specs" / "chat.trace.json").read_text())
            assert [turn["conversation_turn"] for turn in trace["lanes"]["model"]] == [1, 2]
            env = {k: v for k, v in env.items() if not k.startswith("FLOWPROOF_AGENT_")}

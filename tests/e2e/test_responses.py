"""Record a real openai-agents agent (Responses API) against the scripted upstream, then replay
it with no model: plain and streamed, a changed tool output and a changed tool list as
divergences, and an input guardrail whose model call runs beside the main one."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PROXY_VARIABLES, STRIPPED_PREFIXES, agent_command, flowproof
from tests.e2e.booking import KEY, record
from tests.upstream.scripted import Received, ScriptedUpstream, Step, calls, text, tool_call

REPLY = "Your flight KQ311 to Nairobi is booked: B-1042."
SCRIPT = [
    calls(tool_call("search_flights", {"destination": "NBO", "date": "2026-12-01"})),
    calls(tool_call("create_booking", {"flight_id": "KQ311", "passenger": "Casey"})),
    text(REPLY),
]
GUARDRAIL_INSTRUCTIONS = "Decide whether the request is about travel."  # as in the agent
TRACE = Path("specs") / "booking.trace.json"
PASSING_STEPS = (
    "assert_tool_call: search_flights where destination equals NBO",
    "assert_tool_call: create_booking where flight_id equals KQ311 and passenger contains Cas",
    "assert: reply contains booked",
)


def write_spec(directory: Path, *steps: str, **agent_env: str) -> Path:
    env = {"OPENAI_AGENTS_DISABLE_TRACING": "1", **agent_env}
    env_block = "".join(f'\n            {key}: "{value}"' for key, value in env.items())
    step_block = "".join(f"\n          - {line}" for line in steps)
    spec = textwrap.dedent(f"""\
        name: Agents SDK assistant books a flight
        app: agent
        agent:
          command: "{agent_command("agents_sdk_agent.py")}"
          env:{env_block}
        tools:
          - name: search_flights
            result: {{ flights: [ {{ id: KQ311, dest: NBO }} ] }}
          - name: create_booking
        steps:
          - prompt: Book me a flight to Nairobi tomorrow{step_block}
        """)
    path = directory / "specs" / "booking.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec)
    return path


def stream_env(stream: bool) -> dict[str, str]:
    return {"AGENT_STREAM": "1"} if stream else {}


@dataclass(frozen=True)
class Recording:
    project: Path
    """A project directory holding the spec and the trace it recorded."""
    received: list[Received]
    """What reached the scripted upstream while recording."""


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Recording]:
    """The booking flow recorded once plain and once streamed, shared by the module's tests
    (importing openai-agents alone takes seconds); each test works on its own copy."""
    made = {}
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):  # clean_environ is per test; this runs before it
            if name.startswith(STRIPPED_PREFIXES) or name in PROXY_VARIABLES:
                patch.delenv(name)
        for stream in (False, True):
            project = tmp_path_factory.mktemp("stream" if stream else "json")
            upstream = ScriptedUpstream(script=list(SCRIPT))
            upstream.start()
            try:
                write_spec(project, *PASSING_STEPS, **stream_env(stream))
                result = record(project, upstream)
            finally:
                upstream.stop()
            assert result.code == 0, result.output
            made[stream] = Recording(project, upstream.received)
    return made


def recorded_copy(recordings: dict[bool, Recording], tmp_path: Path, *, stream: bool) -> Path:
    project = tmp_path / "project"
    shutil.copytree(recordings[stream].project, project)
    return project


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_record_forwards_plain_json_to_the_responses_path(
    recordings: dict[bool, Recording], stream: bool
) -> None:
    received = recordings[stream].received
    assert [r.path for r in received] == ["/v1/responses"] * 3
    assert [r.headers.get("Authorization") for r in received] == [f"Bearer {KEY}"] * 3
    # A streaming agent's requests are forwarded without `stream`; replay rebuilds the stream.
    assert all("stream" not in r.body for r in received)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_record_then_replay_with_the_upstream_stopped(
    recordings: dict[bool, Recording], tmp_path: Path, stream: bool
) -> None:
    project = recorded_copy(recordings, tmp_path, stream=stream)
    trace = json.loads((project / TRACE).read_text())
    assert [turn["dialect"] for turn in trace["lanes"]["model"]] == ["openai_responses"] * 3
    # The mocked search result, not the agent's volatile one, is what the model was shown.
    assert trace["lanes"]["model"][1]["request"]["input"][-1] == {
        "call_id": "call_search_flights",
        "output": '{"flights": [{"id": "KQ311", "dest": "NBO"}]}',
        "type": "function_call_output",
    }
    result = flowproof("run", "specs", cwd=project)
    assert result.code == 0, result.output
    assert "PASS  Agents SDK assistant books a flight" in result.stderr
    assert "3 of 3 turns served" in result.stderr


@pytest.mark.parametrize("recorded_stream", [False, True], ids=["json-to-stream", "stream-to-json"])
def test_replay_may_stream_when_the_recording_did_not(
    recordings: dict[bool, Recording], tmp_path: Path, recorded_stream: bool
) -> None:
    project = recorded_copy(recordings, tmp_path, stream=recorded_stream)
    write_spec(project, *PASSING_STEPS, **stream_env(not recorded_stream))
    result = flowproof("run", "specs", cwd=project)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_changed_tool_output_is_a_field_level_divergence(
    recordings: dict[bool, Recording], tmp_path: Path, stream: bool
) -> None:
    project = recorded_copy(recordings, tmp_path, stream=stream)
    write_spec(project, AGENT_BUG="rewrite-flight-id", **stream_env(stream))
    result = flowproof("run", "specs", cwd=project)
    assert result.code == 1, result.output
    assert "request 3 matches no recorded turn (compared with recorded turn 3)" in result.stderr
    # The SDK echoes the model's function_call verbatim; the regression is in what the tool
    # reported back, and the diff descends into that JSON string.
    assert 'input[4].output: flight: recorded "KQ311", replayed "KQ999"' in result.stderr


def test_added_tool_is_named_in_the_envelope(
    recordings: dict[bool, Recording], tmp_path: Path
) -> None:
    project = recorded_copy(recordings, tmp_path, stream=False)
    write_spec(project, AGENT_BUG="extra-tool")
    result = flowproof("run", "specs", cwd=project)
    assert result.code == 1, result.output
    assert "request 1 matches no recorded turn (compared with recorded turn 1)" in result.stderr
    assert "tools: added cancel_booking" in result.stderr
    assert "tools[2]: recorded (absent), replayed {" in result.stderr


def test_failing_assertion_reports_the_recorded_argument(
    recordings: dict[bool, Recording], tmp_path: Path
) -> None:
    project = recorded_copy(recordings, tmp_path, stream=False)
    write_spec(project, "assert_tool_call: create_booking where flight_id equals KQ999")
    result = flowproof("run", "specs", cwd=project)
    assert result.code == 1, result.output
    assert 'create_booking was called once, with flight_id = "KQ311"' in result.stderr


# -- the input guardrail: two model calls in flight at once -----------------------------------


class GuardedModel:
    """Scripted decisions taken from the request, because the guardrail's call and the main
    agent's first call race: which one is request 1 differs from run to run."""

    def __init__(self, upstream: ScriptedUpstream) -> None:
        self.upstream = upstream
        self.arrived_by_first_answer: int | None = None
        """How many requests had reached the upstream when it decided its first answer."""

    def __call__(self, body: dict[str, Any]) -> Step:
        if self.arrived_by_first_answer is None:
            # Decided after the upstream's delay: a concurrent sibling has arrived by now, a
            # sequential one could not have (it waits for this answer).
            self.arrived_by_first_answer = len(self.upstream.received)
        if body.get("instructions") == GUARDRAIL_INSTRUCTIONS:
            return text('{"on_topic":true}')
        done = sum(1 for item in body["input"] if item.get("type") == "function_call_output")
        return SCRIPT[done]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_guardrail_runs_beside_the_main_call_and_the_reply_is_the_main_one(
    tmp_path: Path, upstream: ScriptedUpstream, stream: bool
) -> None:
    model = GuardedModel(upstream)
    upstream.script = [model] * 4
    upstream.delay = 0.3
    steps = (*PASSING_STEPS, f"assert: 'reply is {REPLY}'")
    write_spec(tmp_path, *steps, AGENT_GUARDRAIL="1", **stream_env(stream))
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    arrivals = [(r.body["instructions"], len(r.body["input"])) for r in upstream.received]
    assert model.arrived_by_first_answer == 2, f"the first calls did not overlap: {arrivals}"
    upstream.stop()

    trace = json.loads((tmp_path / TRACE).read_text())
    instructions = [turn["request"]["instructions"] for turn in trace["lanes"]["model"]]
    assert len(instructions) == 4 and instructions.count(GUARDRAIL_INSTRUCTIONS) == 1
    for _ in range(2):  # the arrival order at replay is a race too; neither order may matter
        result = flowproof("run", "specs", cwd=tmp_path)
        assert result.code == 0, result.output
        assert "4 of 4 turns served" in result.stderr

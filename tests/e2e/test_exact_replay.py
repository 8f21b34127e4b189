"""Byte-exact replay, end to end: a real agent recorded against the scripted upstream keeps the
digest of every request it sent, and replays with each turn served by its bytes alone; an agent
whose requests carry its working directory (a normalised fact) is read and matched instead, and
passes all the same. The count comes from the replay's own note (FLOWPROOF_DEBUG_REPLAY)."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

from flowproof.engine.strategy import DEBUG_REPLAY_VARIABLE
from tests.conftest import ROOT, flowproof
from tests.e2e.booking import record
from tests.e2e.test_environment_defaults import machine, record_notes, write_project
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

TURNS = 10
SCRIPT = [calls(tool_call("lookup", {"step": i}, call_id=f"call_{i}")) for i in range(TURNS - 1)]
SCRIPT.append(text("Your itinerary is booked: nine legs, all confirmed."))

DEBUG = {DEBUG_REPLAY_VARIABLE: "1"}
_NOTE = re.compile(r"byte-exact replay: (\d+) of (\d+) turns served by their bytes")


def served_exactly(output: str) -> tuple[int, int]:
    found = _NOTE.search(output)
    assert found is not None, output
    return int(found.group(1)), int(found.group(2))


def write_itinerary(project: Path) -> None:
    """The bench's agent (bench/agent10.py): a ten-turn openai-SDK tool loop whose one tool is
    deterministic, so nothing is mocked."""
    (project / "specs").mkdir(parents=True)
    (project / "specs" / "flow.yaml").write_text(
        textwrap.dedent(f"""\
        name: Ten-turn itinerary
        app: agent
        agent:
          command: "{sys.executable} {ROOT / "bench" / "agent10.py"}"
        tools:
          - name: lookup
        steps:
          - prompt: Plan my nine-leg trip to Nairobi, one lookup per leg.
          - assert_tool_call: lookup where step equals 8
          - assert: reply contains booked
        """)
    )


def test_a_recorded_agent_replays_every_turn_by_its_bytes(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    write_itinerary(tmp_path)
    upstream.script = list(SCRIPT)
    result = record(tmp_path, upstream)
    upstream.stop()
    assert result.code == 0, result.output
    trace = json.loads((tmp_path / "specs" / "flow.trace.json").read_text())
    turns = trace["lanes"]["model"]
    assert trace["format_version"] == 5 and len(turns) == TURNS
    digests = [turn.get("request_sha256") for turn in turns]
    assert all(re.fullmatch(r"[0-9a-f]{64}", str(d)) for d in digests), digests
    assert len(set(digests)) == TURNS  # each request's own bytes

    replayed = flowproof("run", "specs", cwd=tmp_path, env=DEBUG)
    assert replayed.code == 0, replayed.output
    assert f"{TURNS} of {TURNS} turns served" in replayed.stderr
    assert served_exactly(replayed.output) == (TURNS, TURNS)


def test_the_same_replay_without_digests_reads_every_request_and_passes(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """A format-4 trace (no digests): the slow path serves every turn, green as before."""
    write_itinerary(tmp_path)
    upstream.script = list(SCRIPT)
    assert record(tmp_path, upstream).code == 0
    upstream.stop()
    path = tmp_path / "specs" / "flow.trace.json"
    trace = json.loads(path.read_text())
    trace["format_version"] = 4
    for turn in trace["lanes"]["model"]:
        del turn["request_sha256"]
    path.write_text(json.dumps(trace, indent=2))

    replayed = flowproof("run", "specs", cwd=tmp_path, env=DEBUG)
    assert replayed.code == 0, replayed.output
    assert served_exactly(replayed.output) == (0, TURNS)


def test_an_agent_that_sends_its_working_directory_is_matched_by_reading_and_passes(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    env = machine(tmp_path, "a")
    project = Path(env["HOME"]) / "src" / "project"
    write_project(project)
    trace = json.loads(record_notes(project, upstream, env))
    assert all("request_sha256" in turn for turn in trace["lanes"]["model"])

    # The same machine, the same path: the bytes are the recorded bytes, but they hold the
    # working directory, which the slow path turns into its placeholder.
    replayed = flowproof("run", "specs", cwd=project, env={**env, **DEBUG})
    assert replayed.code == 0, replayed.output
    assert served_exactly(replayed.output) == (0, len(trace["lanes"]["model"]))


def test_a_flow_with_a_mocked_tool_result_is_matched_by_reading_and_passes(
    recorded: Path,
) -> None:
    """The booking flow mocks search_flights: its first request (before any tool ran) is
    recorded with a digest, the later ones are not, and none is served by its bytes."""
    trace = json.loads((recorded / "specs" / "booking.trace.json").read_text())
    assert ["request_sha256" in turn for turn in trace["lanes"]["model"]] == [True, False, False]
    replayed = flowproof("run", "specs", cwd=recorded, env=DEBUG)
    assert replayed.code == 0, replayed.output
    assert served_exactly(replayed.output) == (0, 3)


def test_a_request_edited_by_hand_beside_its_digest_is_read_and_judged(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """The last turn's stored system prompt is edited in place, its `request_sha256` kept: the
    agent's bytes still match that digest, but the file no longer matches its own
    `file_sha256`, so every request is read, and the edit is judged as a divergence."""
    write_itinerary(tmp_path)
    upstream.script = list(SCRIPT)
    assert record(tmp_path, upstream).code == 0
    upstream.stop()
    path = tmp_path / "specs" / "flow.trace.json"
    before, system, after = path.read_text().rpartition("You are a travel assistant.")
    assert system, "the agent's system prompt is in the trace"
    path.write_text(before + "You are a booking assistant." + after)

    replayed = flowproof("run", "specs", cwd=tmp_path, env=DEBUG)
    assert replayed.code == 1, replayed.output
    assert "booking assistant" in replayed.output, replayed.output
    # Read from the first request on: none served by its bytes (the tenth diverged).
    assert served_exactly(replayed.output) == (0, TURNS - 1)

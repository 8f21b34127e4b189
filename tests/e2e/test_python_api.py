"""The Python API (`from flowproof import Flow`): a real openai-SDK agent replaying a recorded
trace, judged into a typed result, with no CLI underneath: a pass, a divergence and a failed
step, each as a value, and a bad spec as the documented exception."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flowproof import Flow, FlowResult
from flowproof.core.errors import ConfigError, SpecError
from tests.e2e.booking import BOOKING_SCRIPT, KEY, write_spec
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e


@pytest.fixture
def project(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The recorded booking project as the working directory (specs are found from it)."""
    monkeypatch.chdir(recorded)
    return recorded


def copy_trace(project: Path, name: str) -> None:
    shutil.copy(project / "specs" / "booking.trace.json", project / "specs" / f"{name}.trace.json")


def test_a_replay_that_matches_passes_with_every_step_and_its_run_record(project: Path) -> None:
    write_spec(
        project,
        name="judged",
        extra_steps=(
            "  - assert_tool_call: create_booking where flight.id equals KQ311\n"
            "  - assert: reply contains KQ311\n"
        ),
    )
    copy_trace(project, "judged")
    result = Flow("specs/judged.yaml").run(html=project / "out" / "report.html")
    assert isinstance(result, FlowResult)
    assert result.passed and result.reasons == ()
    assert result.mode == "replay" and result.name == "Booking assistant books a flight"
    assert [(step.kind, step.verdict) for step in result.steps] == [
        ("assert_tool_call", "pass"),
        ("assert", "pass"),
    ]
    assert result.divergence is None and result.failed_steps == ()
    assert (result.turns_served, result.turns_recorded) == (3, 3)
    assert result.reply == "Your flight KQ311 to Nairobi is booked: B-1042."
    assert result.trace is None  # a replay writes no trace
    assert result.run_record is not None and result.run_record.is_file()
    written = json.loads(result.run_record.read_text())
    assert written["mode"] == "replay" and written["exit_code"] == 0
    assert written["flows"][0]["verdict"] == "pass"
    assert result.run_record.resolve().is_relative_to(project / ".flowproof" / "runs")
    html = result.reports["html"]
    assert html.is_file() and "Booking assistant books a flight" in html.read_text()
    as_json = json.loads(json.dumps(result.to_dict()))  # JSON-ready all the way down
    assert as_json["verdict"] == "pass" and as_json["steps"][1]["passed"] is True
    assert as_json["trajectory"]["tool_calls"][1]["name"] == "create_booking"
    # The result is a view of the flow's entry in the run record, not a copy shaped anew.
    (entry,) = written["flows"]
    assert as_json == {
        "mode": "replay",
        "run_record": str(result.run_record),
        "reports": {"html": str(html)},
        **entry,
    }
    assert result.record.model_dump(mode="json") == entry


def test_a_changed_agent_diverges_and_the_divergence_is_a_value(project: Path) -> None:
    write_spec(project, name="regressed", agent_env={"AGENT_BUG": "rewrite-flight-id"})
    copy_trace(project, "regressed")
    records_before = sorted((project / ".flowproof" / "runs").glob("*/report.json"))  # record's
    result = Flow(project / "specs" / "regressed.yaml", write_record=False).run()
    assert not result.passed
    assert result.run_record is None  # write_record=False
    divergence = result.divergence
    assert divergence is not None
    assert (divergence.lane, divergence.request, divergence.turn) == ("model", 3, 3)
    first = divergence.fields[0]
    assert first.path.endswith("flight.id")
    assert (first.recorded, first.replayed) == ('"KQ311"', '"KQ999"')
    assert "request 3 matches no recorded turn" in divergence.message
    assert any("request 3 matches no recorded turn" in reason for reason in result.reasons)
    assert result.to_dict()["divergence"]["differences"][0]["replayed"] == '"KQ999"'
    assert sorted((project / ".flowproof" / "runs").glob("*/report.json")) == records_before


def test_a_failed_step_is_a_verdict_with_its_line_and_message(project: Path) -> None:
    write_spec(
        project,
        name="wrong",
        extra_steps=(
            "  - assert: reply contains KQ311\n"
            "  - assert_tool_call: create_booking where flight.id equals KQ999\n"
        ),
    )
    copy_trace(project, "wrong")
    result = Flow("specs/wrong.yaml").run(junit=project / "junit.xml")
    assert not result.passed and result.divergence is None  # the replay matched; a step failed
    assert [step.verdict for step in result.steps] == ["pass", "fail"]
    (failed,) = result.failed_steps
    assert failed.kind == "assert_tool_call" and failed.number == 3  # the prompt is step 1
    assert failed.name == "assert_tool_call create_booking where flight.id equals KQ999"
    assert failed.line == 13  # the spec's line of that step
    assert "KQ999" in failed.message and "KQ311" in failed.observed
    assert result.run_record is not None
    written = json.loads(result.run_record.read_text())
    assert written["exit_code"] == 1
    assert written["flows"] == [result.record.model_dump(mode="json")]
    assert 'failures="1"' in result.reports["junit"].read_text()


def test_reports_are_refused_without_a_run_record(project: Path) -> None:
    with pytest.raises(ValueError, match="keep write_record=True"):
        Flow("specs/booking.yaml", write_record=False).run(html=project / "report.html")
    assert not (project / "report.html").exists()


def test_a_missing_trace_is_a_failed_result_not_an_exception(project: Path) -> None:
    write_spec(project, name="unrecorded")
    result = Flow("specs/unrecorded.yaml").run()
    assert not result.passed
    assert "no trace at specs/unrecorded.trace.json" in result.reasons[0]


def test_a_spec_that_cannot_run_raises_a_spec_error_naming_its_line(project: Path) -> None:
    bad = project / "specs" / "bad.yaml"
    bad.write_text("name: bad\napp: agent\nagent:\n  command: [1]\nsteps:\n  - prompt: hi\n")
    with pytest.raises(SpecError) as raised:
        Flow(bad).run()
    assert raised.value.path == bad and raised.value.line == 4
    assert "agent.command" in str(raised.value)


def test_find_specs_lists_what_run_would_and_refuses_a_missing_path(project: Path) -> None:
    from flowproof.doors.api import find_specs

    assert find_specs() == [Path("specs/booking.yaml")]
    with pytest.raises(ConfigError, match="nowhere: no such file or directory"):
        find_specs(["nowhere"])


def test_record_writes_the_trace_that_run_then_replays(
    tmp_path: Path, upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOWPROOF_AGENT_UPSTREAM", upstream.base_url)
    monkeypatch.setenv("FLOWPROOF_AGENT_KEY", KEY)
    recorded = Flow("specs/booking.yaml").record()
    assert recorded.passed and recorded.mode == "record"
    assert recorded.trace == Path("specs/booking.trace.json") and recorded.trace.is_file()
    assert recorded.turns_served == 3 and len(upstream.received) == 3
    assert KEY not in recorded.trace.read_text()
    monkeypatch.delenv("FLOWPROOF_AGENT_UPSTREAM")
    monkeypatch.delenv("FLOWPROOF_AGENT_KEY")
    replayed = Flow("specs/booking.yaml").run()
    assert replayed.passed and len(upstream.received) == 3  # the replay asked nothing upstream


def test_a_conversation_s_steps_carry_their_user_turn(
    tmp_path: Path, upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.test_conversation import SCRIPT, upstream_env
    from tests.e2e.test_conversation import write_spec as write_conversation

    upstream.script = list(SCRIPT)
    write_conversation(tmp_path)
    for name, value in upstream_env(upstream).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    recorded = Flow("specs/travel.yaml").record()
    assert recorded.passed, recorded.reasons
    upstream.stop()
    result = Flow("specs/travel.yaml").run()
    assert result.passed, result.reasons
    # Three steps under each user turn, then the two flow-wide ones.
    assert [step.turn for step in result.steps] == [1, 1, 1, 2, 2, 2, None, None]
    assert result.to_dict()["steps"][3]["turn"] == 2

"""The pytest plugin: specs collected as tests (`pytest --flowproof specs/`), and the in-process
fixture recording and replaying a real openai-SDK agent function."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.booking import BOOKING_SCRIPT, KEY, write_spec
from tests.e2e.test_redaction import write_echo_spec
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e


@pytest.fixture
def project(recorded: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The recorded booking project, a diverging copy of its flow, and a workflow YAML that is
    not a spec, in pytester's directory."""
    shutil.copytree(recorded / "specs", pytester.path / "specs")
    write_spec(pytester.path, name="regressed", agent_env={"AGENT_BUG": "rewrite-flight-id"})
    shutil.copy(
        pytester.path / "specs" / "booking.trace.json",
        pytester.path / "specs" / "regressed.trace.json",
    )
    (pytester.path / "specs" / "ci.yml").write_text("on: push\njobs: {}\n")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return pytester.path


def test_specs_are_collected_one_test_per_flow(project: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--flowproof", "specs", "--collect-only", "-q")
    collected = [line for line in result.outlines if "::" in line]
    assert collected == ["specs/booking.yaml::booking", "specs/regressed.yaml::regressed"]


def test_a_flow_passes_and_a_divergence_fails_with_its_message(
    project: Path, pytester: pytest.Pytester
) -> None:
    result = pytester.runpytest_subprocess("--flowproof", "specs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*request 3 matches no recorded turn (compared with recorded turn 3)*",
            '*flight.id: recorded "KQ311", replayed "KQ999"*',
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # What pytest says of the failed flow is its run record's reasons, line for line.
    records = [
        json.loads(p.read_text()) for p in pytester.path.glob(".flowproof/runs/*/report.json")
    ]
    (failed,) = [
        flow for record in records for flow in record["flows"] if flow["verdict"] == "fail"
    ]
    reported = [line.strip() for line in result.stdout.lines]
    for reason in failed["reasons"]:
        lines = [line.strip() for line in reason.splitlines()]
        start = reported.index(lines[0])
        assert reported[start : start + len(lines)] == lines


def test_flows_run_under_xdist_and_k(project: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--flowproof", "specs", "-n", "2", "-k", "not regressed")
    result.assert_outcomes(passed=1)  # the diverging flow was deselected by -k


def test_k_selects_a_flow_by_a_word_of_its_name_and_junit_names_it(
    project: Path, pytester: pytest.Pytester
) -> None:
    write_spec(project, name="trip", title="Trip planner books Zanzibar")
    shutil.copy(project / "specs" / "booking.trace.json", project / "specs" / "trip.trace.json")
    junit = project / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--flowproof", "specs", "-k", "Zanzibar", f"--junitxml={junit}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)  # the trip flow alone: its file says nothing of Zanzibar
    assert 'name="trip"' in junit.read_text()
    assert '<property name="flow" value="Trip planner books Zanzibar"' in junit.read_text()


def test_a_failing_flow_says_how_to_re_record_it(project: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--flowproof", "specs", "-k", "regressed")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*re-record this flow: pytest --flowproof --flowproof-record 'specs/regressed.yaml::regressed'*"
        ]
    )


def test_without_the_option_no_spec_is_collected(project: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("specs", "--collect-only", "-q")
    assert not [line for line in result.outlines if "::" in line]


IN_PROCESS = """
    import io
    import json
    from contextlib import redirect_stdout

    from tests.agents import openai_chat_agent


    def test_booking(flowproof_flow):
        printed = io.StringIO()
        with flowproof_flow("specs/booking.yaml") as flow, redirect_stdout(printed):
            openai_chat_agent.main()  # the agent's own entry function, in this process
        assert flow.outcome.passed
        assert "KQ311" in printed.getvalue()
        # the flow's result is its entry in the run record it wrote
        written = json.loads(flow.outcome.run_record.read_text())
        assert written["flows"] == [flow.outcome.record.model_dump(mode="json")]
"""


def test_the_in_process_fixture_records_and_replays_an_agent_function(
    pytester: pytest.Pytester, upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(pytester.path)
    pytester.makepyfile(test_agent=textwrap.dedent(IN_PROCESS))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("FLOWPROOF_AGENT_UPSTREAM", upstream.base_url)
    monkeypatch.setenv("FLOWPROOF_AGENT_KEY", KEY)
    recorded = pytester.runpytest_subprocess("--flowproof-record", "test_agent.py")
    recorded.assert_outcomes(passed=1)
    trace = pytester.path / "specs" / "booking.trace.json"
    assert trace.exists() and KEY not in trace.read_text()
    assert len(upstream.received) == 3
    upstream.stop()
    monkeypatch.delenv("FLOWPROOF_AGENT_UPSTREAM")
    monkeypatch.delenv("FLOWPROOF_AGENT_KEY")
    replayed = pytester.runpytest_subprocess("test_agent.py")
    replayed.assert_outcomes(passed=1)
    assert list((pytester.path / ".flowproof" / "runs").glob("*/report.json"))


def test_an_in_process_flow_that_diverges_fails_the_test_with_the_divergence(
    recorded: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(recorded / "specs", pytester.path / "specs")
    body = textwrap.dedent(IN_PROCESS).replace(
        "openai_chat_agent.main()",
        "openai_chat_agent.BUG = 'rewrite-flight-id'; openai_chat_agent.main()",
    )
    pytester.makepyfile(test_agent=body)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    result = pytester.runpytest_subprocess("test_agent.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*request 3 matches no recorded turn*"])


def test_a_collected_flow_writes_its_run_record(project: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--flowproof", "specs", "-k", "not regressed")
    result.assert_outcomes(passed=1)
    (record,) = (pytester.path / ".flowproof" / "runs").glob("*/report.json")
    assert '"Booking assistant books a flight"' in record.read_text()


ECHOED = "sk-live-echoed-0123456789abcdef"


def test_a_key_the_agent_echoes_is_redacted_in_pytest_output_and_the_run_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_echo_spec(pytester.path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("OPENAI_API_KEY", ECHOED)
    monkeypatch.setenv("AGENT_ECHO", ECHOED)
    result = pytester.runpytest_subprocess("--flowproof", "specs", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    marker = "key=[redacted OPENAI_API_KEY]"
    printed = result.stdout.str() + result.stderr.str()
    assert marker in printed  # pytest shows the failure, redacted
    assert ECHOED not in printed
    (record,) = (pytester.path / ".flowproof" / "runs").glob("*/report.json")
    assert marker in record.read_text() and ECHOED not in record.read_text()


def test_an_agent_cwd_holding_the_specs_is_refused_as_flowproof_run_refuses_it(
    project: Path, pytester: pytest.Pytester
) -> None:
    spec = project / "specs" / "booking.yaml"
    spec.write_text(spec.read_text().replace("agent:\n", "agent:\n  cwd: .\n", 1))
    result = pytester.runpytest_subprocess("--flowproof", "specs", "-k", "not regressed")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*agent.cwd {project}/specs holds its trace (*booking.trace.json), which flowproof writes*"
        ]
    )

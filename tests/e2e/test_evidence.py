"""Run records, the secret-leak control and `flowproof audit`, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.unit.report.builders import make_flow, make_record
from tests.upstream.scripted import ScriptedUpstream

PASSWORD = "hunter2-db-9f3a"


def run_records(project: Path) -> list[dict]:
    return [
        json.loads(p.read_text())
        for p in sorted((project / ".flowproof" / "runs").glob("*/report.json"))
    ]


def test_every_run_writes_a_run_record(recorded: Path) -> None:
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 0
    records = run_records(recorded)
    assert [r["mode"] for r in records] == ["record", "replay"]
    latest = records[-1]
    assert f"run record: .flowproof/runs/{latest['run_id']}/report.json" in result.stderr
    flow = latest["flows"][0]
    assert flow["verdict"] == "pass" and flow["turns"] == {"served": 3, "recorded": 3}
    assert [c["name"] for c in flow["trajectory"]["tool_calls"]] == [
        "search_flights",
        "create_booking",
    ]
    assert flow["timeline"][1]["tool_results"] == [
        {"tool": "search_flights", "content": '{"flights": [{"id": "KQ311", "dest": "NBO"}]}'}
    ]


def test_a_diverged_run_records_the_divergence(recorded: Path) -> None:
    write_spec(recorded, agent_env={"AGENT_BUG": "rewrite-flight-id"})
    assert flowproof("run", "specs", cwd=recorded).code == 1
    flow = run_records(recorded)[-1]["flows"][0]
    assert flow["verdict"] == "fail"
    divergence = flow["divergence"]
    # Every fact of the divergence is a field: no reader has to split the sentence.
    assert (divergence["lane"], divergence["index"], divergence["recorded_index"]) == (
        "model",
        3,
        3,
    )
    assert divergence["path"] == "messages[4].tool_calls[0].function.arguments: flight.id"
    assert (divergence["recorded"], divergence["replayed"]) == ('"KQ311"', '"KQ999"')
    assert divergence["text"].endswith(
        "messages[4].tool_calls[0].function.arguments: flight.id: "
        'recorded "KQ311", replayed "KQ999"'
    )


def leak_spec(directory: Path, bug: str = "leak-secret") -> Path:
    return write_spec(
        directory,
        agent_env={"AGENT_BUG": bug} if bug else None,
        extra_steps="  - assert_no_secret_leak: DB_PASSWORD\n",
    )


def test_a_leaked_secret_fails_record_names_the_variable_and_never_the_value(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    leak_spec(tmp_path)
    result = record(tmp_path, upstream, DB_PASSWORD=PASSWORD)
    assert result.code == 1, result.output
    assert (
        "step 2 (booking.yaml:13): assert_no_secret_leak DB_PASSWORD — the value of "
        "DB_PASSWORD appeared in turn 1 request at messages[1].content"
    ) in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()
    assert PASSWORD not in result.output
    record_text = next((tmp_path / ".flowproof" / "runs").glob("*/report.json")).read_text()
    assert "DB_PASSWORD" in record_text and PASSWORD not in record_text
    step = json.loads(record_text)["flows"][0]["steps"][-1]
    assert step["passed"] is False and "the value of DB_PASSWORD appeared" in step["message"]
    assert step["kind"] == "assert_no_secret_leak"
    assert step["observed"].startswith("the value of DB_PASSWORD appeared in turn ")
    reports = flowproof(
        "report", "--html", "r.html", "--markdown", "r.md", "--junit", "r.xml", cwd=tmp_path
    )
    assert reports.code == 0, reports.output
    for name in ("r.html", "r.md", "r.xml"):
        assert "DB_PASSWORD" in (tmp_path / name).read_text()
    on_disk = [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert not any(PASSWORD in text for text in on_disk), "the secret reached the disk"


def test_no_leak_passes_at_record_and_is_rescanned_at_replay(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    leak_spec(tmp_path, bug="")
    assert record(tmp_path, upstream, DB_PASSWORD=PASSWORD).code == 0
    upstream.stop()
    assert flowproof("run", "specs", cwd=tmp_path, env={"DB_PASSWORD": PASSWORD}).code == 0
    # the recorded traffic contains "KQ311": declared as the secret, the replay scan finds it
    found = flowproof("run", "specs", cwd=tmp_path, env={"DB_PASSWORD": "KQ311"})
    assert found.code == 1
    assert "the value of DB_PASSWORD appeared in turn 2 request" in found.stderr
    assert "KQ311" not in found.stderr


def test_an_unset_secret_is_a_configuration_error(recorded: Path) -> None:
    leak_spec(recorded, bug="")
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 2
    assert (
        "assert_no_secret_leak names DB_PASSWORD, which is not set (or empty) in the "
        "environment; an unset secret cannot be checked"
    ) in result.stderr


def control_spec(directory: Path, bug: str | None, name: str) -> None:
    spec = write_spec(directory, agent_env={"AGENT_BUG": bug} if bug else None, name=name)
    spec.write_text(spec.read_text() + f"control: sec.{name}\n")


def test_audit_shows_the_latest_verdict_per_control_over_three_runs(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT * 2
    control_spec(tmp_path, None, "booking")
    control_spec(tmp_path, None, "refunds")
    assert record(tmp_path, upstream).code == 0  # run 1: both pass
    upstream.stop()
    control_spec(tmp_path, "rewrite-flight-id", "refunds")
    assert flowproof("run", "specs", cwd=tmp_path).code == 1  # run 2: refunds fails
    control_spec(tmp_path, "rewrite-flight-id", "booking")
    control_spec(tmp_path, None, "refunds")
    assert flowproof("run", "specs", cwd=tmp_path).code == 1  # run 3: booking fails, refunds fixed
    runs = run_records(tmp_path)
    assert len(runs) == 3
    result = flowproof("audit", "--markdown", "audit.md", cwd=tmp_path)
    assert result.code == 1  # a control needs attention
    lines = {
        line.lstrip("! ").split()[0]: line for line in result.stderr.splitlines() if "sec." in line
    }
    assert "FAIL" in lines["sec.booking"] and runs[2]["run_id"] in lines["sec.booking"]
    assert "latest run failed" in lines["sec.booking"]
    assert "PASS" in lines["sec.refunds"] and runs[2]["run_id"] in lines["sec.refunds"]
    assert "lanes: tool_call" not in lines["sec.refunds"]  # these flows assert nothing but replay
    markdown = (tmp_path / "audit.md").read_text()
    assert "| ⚠ `sec.booking` | ❌ fail (latest run failed) |" in markdown
    assert "containment" in markdown and "not engaged" in markdown


def test_audit_html_escapes_what_specs_wrote(tmp_path: Path) -> None:
    runs = tmp_path / "runs" / "20261129T000000Z-abcdef"
    runs.mkdir(parents=True)
    control = {
        "id": "<script>alert(1)</script>",
        "verdict": "pass",
        "lanes": ["reply"],
        "containment": "not engaged",
        "evidence": {"spec": "s.yaml", "turns": {"served": 3, "recorded": 3}, "failed_steps": []},
    }
    record = {
        **make_record([make_flow("s.yaml", "<b>flow</b>", control=control)]),
        "run_id": "20261129T000000Z-abcdef",
    }
    (runs / "report.json").write_text(json.dumps(record))
    result = flowproof("audit", "--runs", "runs", "--html", "audit.html", cwd=tmp_path)
    assert result.code == 0, result.output
    html = (tmp_path / "audit.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;flow&lt;/b&gt;" in html


def test_in_github_actions_run_writes_the_job_summary_and_annotations(recorded: Path) -> None:
    write_spec(recorded, extra_steps="  - assert: reply contains cancelled\n")
    summary = recorded / "step-summary.md"
    result = flowproof(
        "run",
        "specs",
        "--junit",
        "junit.xml",
        cwd=recorded,
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.code == 1
    assert (
        "::error file=specs/booking.yaml,line=12::step 2 (booking.yaml:12): assert reply "
        "contains cancelled" in result.stdout
    )
    assert "Booking assistant books a flight" in summary.read_text()
    assert "<testcase" in (recorded / "junit.xml").read_text()
    quiet = flowproof("run", "specs", cwd=recorded)  # outside Actions: no workflow commands
    assert "::error" not in quiet.stdout


def test_run_records_go_to_the_runs_dir_given_and_report_and_audit_read_it(
    recorded: Path,
) -> None:
    spec = recorded / "specs" / "booking.yaml"
    spec.write_text("control: sec.booking\n" + spec.read_text())
    default = recorded / ".flowproof" / "runs"
    before = sorted(default.glob("*/report.json"))
    ran = flowproof("run", "specs", "--runs-dir", "ci/runs", cwd=recorded)
    assert ran.code == 0, ran.output
    (written,) = (recorded / "ci" / "runs").glob("*/report.json")
    assert f"run record: {Path('ci/runs') / written.parent.name / 'report.json'}" in ran.stderr
    assert sorted(default.glob("*/report.json")) == before  # nothing went to the default

    env = {"FLOWPROOF_RUNS_DIR": "ci/runs"}
    reported = flowproof("report", "--markdown", "pr.md", cwd=recorded, env=env)
    assert reported.code == 0, reported.output
    assert written.parent.name in (recorded / "pr.md").read_text()
    audited = flowproof("audit", cwd=recorded, env=env)
    assert audited.code == 0, audited.output
    assert "sec.booking" in audited.stderr and f"run {written.parent.name}" in audited.stderr
    by_option = flowproof("report", "--runs-dir", "nowhere", "--html", "r.html", cwd=recorded)
    assert by_option.code == 2
    assert "error: no run records under nowhere; run `flowproof run` first" in by_option.stderr

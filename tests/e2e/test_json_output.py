"""`--json` on run, record, doctor, trace lint and report: stdout is ONE JSON document that
validates against its committed schema (docs/schemas/), the human text stays on stderr, and the
exit code is the one the same command gives without --json."""

from __future__ import annotations

import json
import os
import shutil
import signal
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, CliResult, agent_command, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, write_spec
from tests.e2e.test_redaction import write_echo_spec
from tests.e2e.test_supervision import StallingUpstream, start_flowproof, wait_until
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e
AGENT = agent_command("openai_chat_agent.py")
LOOKS_LIKE_A_KEY = "sk-proj-" + "Q7w8E9r0T1y2U3i4" * 2


@cache
def validator(name: str) -> Any:
    schema = json.loads((ROOT / "docs" / "schemas" / f"{name}.schema.json").read_text("utf-8"))
    return jsonschema.Draft202012Validator(schema)


def document(result: CliResult, schema: str) -> dict[str, Any]:
    """stdout as the one document it must be: one line, parsed whole, valid against `schema`."""
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    errors = [f"{e.json_path}: {e.message}" for e in validator(schema).iter_errors(parsed)]
    assert not errors, errors
    return parsed


def twice(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[CliResult, CliResult]:
    """The command without --json, then with it."""
    return flowproof(*args, cwd=cwd, env=env), flowproof(*args, "--json", cwd=cwd, env=env)


def test_a_passing_run_prints_its_run_record(recorded: Path) -> None:
    plain, result = twice("run", "specs", cwd=recorded)
    assert plain.code == result.code == 0, result.output
    record = document(result, "run-record")
    assert record["mode"] == "replay" and record["exit_code"] == 0
    assert [flow["verdict"] for flow in record["flows"]] == ["pass"]
    # the record printed is the one written, and the human text is where it was
    written = recorded / ".flowproof" / "runs" / record["run_id"] / "report.json"
    assert json.loads(written.read_text()) == record
    assert "PASS  Booking assistant books a flight" in result.stderr
    assert plain.stdout == ""


def test_a_failing_run_prints_its_record_and_keeps_exit_1(recorded: Path) -> None:
    write_spec(recorded, extra_steps="  - assert_tool_call: cancel_booking\n")
    plain, result = twice("run", "specs", cwd=recorded)
    assert plain.code == result.code == 1, result.output
    record = document(result, "run-record")
    assert record["exit_code"] == 1
    (flow,) = record["flows"]
    assert flow["verdict"] == "fail"
    assert [step["passed"] for step in flow["steps"]] == [False]
    assert "FAIL  Booking assistant books a flight" in result.stderr
    written = recorded / ".flowproof" / "runs" / record["run_id"] / "report.json"
    assert json.loads(written.read_text()) == record


def test_in_github_actions_stdout_still_holds_the_document_alone(tmp_path: Path) -> None:
    """The annotations move to stderr (the runner reads them there too), and a key the agent
    echoed is redacted in the document as in the record."""
    write_echo_spec(tmp_path)
    summary = tmp_path / "summary.md"
    env = {
        "OPENAI_API_KEY": KEY,
        "AGENT_ECHO": KEY,
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    plain, result = twice("run", "specs", cwd=tmp_path, env=env)
    assert plain.code == result.code == 1, result.output
    assert "::error file=specs/echo.yaml" in plain.stdout  # without --json: on stdout
    assert "::error file=specs/echo.yaml" in result.stderr
    record = document(result, "run-record")
    assert "[redacted OPENAI_API_KEY]" in result.stdout
    assert KEY not in result.output
    assert record["flows"][0]["verdict"] == "fail"


def test_record_prints_its_run_record_and_no_key(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    env = {"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY}
    result = flowproof("record", "specs", "--json", cwd=tmp_path, env=env)
    assert result.code == 0, result.output
    record = document(result, "run-record")
    assert record["mode"] == "record"
    assert record["flows"][0]["trace"] == "specs/booking.trace.json"
    assert KEY not in result.output


def test_an_interrupted_record_still_prints_its_run_record(tmp_path: Path) -> None:
    write_spec(tmp_path, timeout=60)
    stalling = StallingUpstream()
    stalling.stall = True  # the model call is in flight when the signal comes
    stalling.start()
    try:
        process = start_flowproof(
            "record", "specs", "--json", cwd=tmp_path, upstream=stalling, own_group=True
        )
        try:
            wait_until(lambda: stalling.received)
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
            stdout, stderr = process.communicate(timeout=30)
        finally:
            process.kill()
            process.wait()
    finally:
        stalling.released.set()
        stalling.stop()
    # The engine exits 130; a launcher in the same group (npx) that got the Ctrl-C too ends by
    # the signal itself, which a shell reads as 130 just the same.
    assert process.returncode in (130, -signal.SIGINT), stderr
    record = document(CliResult(130, stdout, stderr), "run-record")
    assert record["exit_code"] == 130
    assert [flow["interrupted"] for flow in record["flows"]] == ["SIGINT"]
    assert "interrupted by SIGINT" in stderr


def test_a_config_error_is_an_error_document_with_exit_2(tmp_path: Path) -> None:
    plain, result = twice("run", "nowhere", cwd=tmp_path)
    assert plain.code == result.code == 2, result.output
    error = document(result, "error")["error"]
    assert error["kind"] == "config" and error["type"] == "ConfigError"
    assert error["message"] == "nowhere: no such file or directory"
    assert error["exit_code"] == 2
    assert "error: nowhere: no such file or directory" in result.stderr


def test_a_spec_error_names_its_file_and_line(recorded: Path) -> None:
    """trace lint loads the spec beside each trace: a broken one stops it, exit 2."""
    spec = recorded / "specs" / "booking.yaml"
    spec.write_text(spec.read_text().replace("  command:", "  comand:"))
    plain, result = twice("trace", "lint", cwd=recorded)
    assert plain.code == result.code == 2, result.output
    error = document(result, "error")["error"]
    assert error["kind"] == "config" and error["type"] == "SpecError"
    assert (error["file"], error["line"]) == ("specs/booking.yaml", 4)
    assert "unknown key 'comand'" in error["message"]


@pytest.mark.parametrize(
    "args",
    [("run", "--json", "--bogus"), ("run", "--bogus", "--json"), ("run", "--json", "-j", "0")],
)
def test_a_usage_error_is_an_error_document_with_exit_2(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """Whether click stops before reading --json (an unknown option) or after."""
    plain = flowproof(*[arg for arg in args if arg != "--json"], cwd=tmp_path)
    result = flowproof(*args, cwd=tmp_path)
    assert plain.code == result.code == 2, result.output
    error = document(result, "error")["error"]
    assert error["kind"] == "usage" and error["exit_code"] == 2
    assert error["message"] in result.stderr  # click's own text, on stderr


def test_doctor_reports_what_arrived(tmp_path: Path) -> None:
    plain, result = twice("doctor", "--agent", AGENT, cwd=tmp_path)
    assert plain.code == result.code == 0, result.output
    report = document(result, "doctor")
    assert report["exit_code"] == 0 and report["model_requests"] == 1
    assert report["requests"] == [
        {"method": "POST", "path": "/v1/chat/completions", "served_by": "openai_chat", "count": 1}
    ]
    assert report["agent"]["exit_code"] == 0
    assert "1 model request arrived at flowproof's proxy" in result.stderr


def test_doctor_with_nothing_arriving_keeps_exit_1(tmp_path: Path) -> None:
    args = ("doctor", "--agent", f"AGENT_BUG=hardcoded-base-url {AGENT}", "--timeout", "30")
    args += ("--mcp-url", "docs")
    plain, result = twice(*args, cwd=tmp_path)
    assert plain.code == result.code == 1, result.output
    report = document(result, "doctor")
    assert report["exit_code"] == 1 and report["model_requests"] == 0
    assert report["mcp_missed"] == ["docs"]
    assert report["agent"]["exit_code"] == 1
    assert "0 model requests arrived" in result.stderr


def test_json_may_come_before_the_command_too(recorded: Path) -> None:
    before = flowproof("--json", "trace", "lint", cwd=recorded)
    after = flowproof("trace", "lint", "--json", cwd=recorded)
    assert before.code == after.code == 0, before.output
    assert document(before, "trace-lint") == document(after, "trace-lint")
    assert before.stdout == after.stdout


def test_trace_lint_lists_its_findings(recorded: Path) -> None:
    clean = flowproof("trace", "lint", "--json", cwd=recorded)
    assert clean.code == 0, clean.output
    assert document(clean, "trace-lint") == {
        "exit_code": 0,
        "traces": ["specs/booking.trace.json"],
        "findings": [],
        "untraced_specs": [],
    }
    trace = recorded / "specs" / "booking.trace.json"
    shutil.copy(trace, recorded / "specs" / "forgotten.trace.json")
    write_spec(recorded, name="later")
    plain, result = twice("trace", "lint", cwd=recorded)
    assert plain.code == result.code == 1, result.output
    report = document(result, "trace-lint")
    assert [(hit["trace"], hit["path"]) for hit in report["findings"]] == [
        ("specs/forgotten.trace.json", "(file)")
    ]
    assert report["untraced_specs"] == ["specs/later.yaml"]


def test_trace_lint_names_a_key_without_printing_it(recorded: Path) -> None:
    trace = recorded / "specs" / "booking.trace.json"
    document_on_disk = json.loads(trace.read_text())
    document_on_disk["lanes"]["model"][0]["request"]["messages"][1]["content"] += (
        f" {LOOKS_LIKE_A_KEY}"
    )
    trace.write_text(json.dumps(document_on_disk))
    result = flowproof("trace", "lint", "--json", cwd=recorded)
    assert result.code == 1, result.output
    (hit,) = document(result, "trace-lint")["findings"]
    assert hit["rule"] == "an OpenAI API key"
    assert hit["path"] == "lanes.model[0].request.messages[1].content"
    assert LOOKS_LIKE_A_KEY not in result.output


def test_report_says_what_it_wrote(recorded: Path) -> None:
    assert flowproof("run", "specs", cwd=recorded).code == 0
    plain, result = twice("report", "--html", "out.html", cwd=recorded)
    assert plain.code == result.code == 0, result.output
    report = document(result, "report")
    assert report["written"] == [{"kind": "html", "path": "out.html"}]
    assert report["flows"] == {"passed": 1, "failed": 0, "interrupted": 0, "not_run": 0}
    assert report["run_exit_code"] == 0 and report["merged"] is False
    (source,) = report["sources"]
    assert Path(recorded / source).parent.name == report["run_id"]
    assert (recorded / "out.html").is_file()


def test_report_merge_names_every_shard_read(recorded: Path) -> None:
    runs = recorded / "shards"
    for _ in range(2):
        assert flowproof("run", "specs", "--runs-dir", "shards", cwd=recorded).code == 0
    shards = sorted(str(path.relative_to(recorded)) for path in runs.iterdir())
    result = flowproof("report", "--merge", *shards, "--json", cwd=recorded)
    assert result.code == 0, result.output
    report = document(result, "report")
    assert report["merged"] is True
    assert report["sources"] == [f"{shard}/report.json" for shard in shards]
    assert report["flows"]["passed"] == 2


def test_report_json_alone_writes_nothing_and_needs_no_file(recorded: Path) -> None:
    assert flowproof("run", "specs", cwd=recorded).code == 0
    plain = flowproof("report", cwd=recorded)
    assert plain.code == 2 and "give at least one report to write" in plain.stderr
    result = flowproof("report", "--json", cwd=recorded)
    assert result.code == 0, result.output
    assert document(result, "report")["written"] == []


def test_report_without_a_run_record_is_an_error_document(tmp_path: Path) -> None:
    plain, result = twice("report", "--html", "out.html", cwd=tmp_path)
    assert plain.code == result.code == 2, result.output
    error = document(result, "error")["error"]
    assert error["type"] == "RunRecordError" and "no run records" in error["message"]


def test_an_internal_error_is_an_error_document_with_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process (the crash is forced by replacing an engine function), as
    tests/e2e/test_internal_error.py does."""
    from flowproof.cli import main
    from flowproof.engine import front

    def crashing(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("a bug in flowproof")

    write_spec(tmp_path)
    monkeypatch.setattr(front, "open_flow", crashing)
    monkeypatch.setattr("flowproof.cli.flows.open_flow", crashing)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "specs", "--json"])
    assert result.exit_code == 3, result.output
    error = document(CliResult(3, result.stdout, result.stderr), "error")["error"]
    assert error["kind"] == "internal" and error["type"] == "KeyError"
    assert error["traceback"] is not None and Path(error["traceback"]).is_file()
    assert "internal error (KeyError: 'a bug in flowproof')" in result.stderr

"""`flowproof report [RUN]`: which run record, which files, and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from flowproof.cli import main
from flowproof.cli.report import NO_OUTPUT, report_command
from flowproof.report import render
from flowproof.runrecord.store import parse_run_record
from tests.unit.report.builders import RUN_ID, golden_record


def render_markdown(document: dict) -> str:
    return render.render_markdown(parse_run_record(document, "report.json"))


def render_junit(document: dict) -> str:
    return render.render_junit(parse_run_record(document, "report.json"))


OLDER = "20261128T090000Z-000000"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with two run records, the golden one being the latest."""
    monkeypatch.chdir(tmp_path)
    for run_id in (OLDER, RUN_ID):
        record = {**golden_record(), "run_id": run_id}
        path = tmp_path / ".flowproof" / "runs" / run_id / "report.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(record, indent=2))
    return tmp_path


class Captured:
    err = ""


def exit_code(run: str | None, **outputs: str) -> int:
    """`flowproof report` through the CLI (and its error boundary); stderr in `Captured.err`."""
    args = ["report", *([run] if run else [])]
    for kind, path in outputs.items():
        args += [f"--{kind}", path]
    result = CliRunner().invoke(main, args)
    Captured.err = result.stderr
    return result.exit_code


def test_the_latest_run_is_the_default(project: Path, capsys: pytest.CaptureFixture) -> None:
    assert exit_code(None, markdown="pr.md", junit="out/junit.xml") == 0
    assert (project / "pr.md").read_text() == render_markdown(golden_record())
    assert (project / "out" / "junit.xml").read_text() == render_junit(golden_record())
    assert Captured.err == "markdown report: pr.md\njunit report: out/junit.xml\n"


@pytest.mark.parametrize(
    "run",
    [OLDER, f".flowproof/runs/{OLDER}", f".flowproof/runs/{OLDER}/report.json"],
    ids=["run id", "directory", "report.json"],
)
def test_a_run_by_id_directory_or_file(project: Path, run: str) -> None:
    assert exit_code(run, html="r.html") == 0
    assert OLDER in (project / "r.html").read_text()


def test_no_output_is_a_usage_error(project: Path) -> None:
    with pytest.raises(click.UsageError) as raised:
        report_command((), None, None, None)
    assert raised.value.exit_code == 2 and raised.value.message == NO_OUTPUT


def test_an_unknown_run_exits_2_naming_the_latest(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    assert exit_code("20990101T000000Z-ffffff", html="r.html") == 2
    assert Captured.err == (
        "error: 20990101T000000Z-ffffff: no such run record (not a file, a directory or a run "
        f"id; the latest is {RUN_ID})\n"
    )
    assert not (project / "r.html").exists()


def test_no_runs_at_all_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    assert exit_code(None, html="r.html") == 2
    assert Captured.err == (
        "error: no run records under .flowproof/runs; run `flowproof run` first\n"
    )


def test_a_newer_or_broken_record_exits_2(project: Path, capsys: pytest.CaptureFixture) -> None:
    latest = project / ".flowproof" / "runs" / RUN_ID / "report.json"
    latest.write_text('{"format_version": 99}')
    assert exit_code(None, junit="j.xml") == 2
    assert "written by a newer flowproof (format 99); upgrade flowproof" in Captured.err
    latest.write_text('{"format_version": 1, "flows": []}')
    assert exit_code(None, junit="j.xml") == 2
    assert Captured.err == (
        f"error: {Path('.flowproof/runs') / RUN_ID / 'report.json'}: "
        "not a complete flowproof run record: no 'mode' field\n"
    )


def test_an_unwritable_output_exits_2(project: Path, capsys: pytest.CaptureFixture) -> None:
    (project / "taken").write_text("a file, not a directory")
    assert exit_code(None, html="taken/r.html") == 2
    assert Captured.err == (
        "error: cannot write taken/r.html: its directory taken cannot be created (a file is in "
        "the way); any previous r.html is unchanged\n"
    )

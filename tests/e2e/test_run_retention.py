"""Run records do not pile up: `run` keeps the newest FLOWPROOF_KEEP_RUNS (50 unless set) and
removes older ones, never the run that just ran nor a run still going on beside it. Driven
through the real CLI replaying the committed demo."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliResult, flowproof

pytestmark = pytest.mark.e2e


def replay_demo(runs: Path, **env: str) -> CliResult:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return flowproof(
        "run",
        "examples/agent-demo/specs/",
        "--runs-dir",
        str(runs),
        "--html",
        str(runs.parent / "report.html"),
        cwd=ROOT,
        env={"PATH": path, **env},
    )


def older_runs(runs: Path, template: Path, count: int) -> list[str]:
    """`count` earlier runs (ids from 2026-01-01 on, older than any run made today), each a
    copy of a real record."""
    ids = [f"20260101T0000{second:02d}Z-00000{second % 10}" for second in range(count)]
    for run_id in ids:
        (runs / run_id).mkdir(parents=True)
        shutil.copy(template, runs / run_id / "report.json")
    return ids


def test_run_keeps_the_newest_records_and_never_the_current_or_an_unfinished_one(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    first = replay_demo(runs)
    assert first.code == 0, first.output
    (template,) = runs.glob("*/report.json")
    template = template.rename(tmp_path / "template.json")
    shutil.rmtree(template.parent / "runs")
    old = older_runs(runs, template, 6)
    going_on = runs / "20260101T000000Z-aaaaaa"  # older than all, and has no record yet
    going_on.mkdir()
    (tmp_path / "report.html").unlink()

    result = replay_demo(runs, FLOWPROOF_KEEP_RUNS="3")
    assert result.code == 0, result.output
    kept = sorted(p.name for p in runs.iterdir())
    (current,) = [name for name in kept if not name.startswith("20260101")]
    assert kept == sorted([going_on.name, *old[-2:], current])
    # The report was rendered from the current record, which is still there.
    assert f"run record: {runs / current / 'report.json'}" in result.stderr
    assert "Travel assistant books the cheapest flight" in (tmp_path / "report.html").read_text()


def test_the_default_keeps_fifty_and_zero_keeps_every_record(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = replay_demo(runs)
    assert first.code == 0, first.output
    (template,) = runs.glob("*/report.json")
    template = template.rename(tmp_path / "template.json")
    shutil.rmtree(runs)
    old = older_runs(runs, template, 52)

    assert replay_demo(runs, FLOWPROOF_KEEP_RUNS="0").code == 0
    assert len(list(runs.iterdir())) == 53  # 0: nothing removed

    assert replay_demo(runs).code == 0
    kept = sorted(p.name for p in runs.iterdir())
    assert len(kept) == 50
    assert kept[:48] == old[-48:]  # the oldest five went


@pytest.mark.parametrize("value", ["ten", "-1", "2.5"])
def test_a_bad_keep_runs_value_is_a_usage_error_before_any_flow_runs(
    tmp_path: Path, value: str
) -> None:
    result = replay_demo(tmp_path / "runs", FLOWPROOF_KEEP_RUNS=value)
    assert result.code == 2, result.output
    assert f"FLOWPROOF_KEEP_RUNS='{value}' is not a whole number" in result.stderr
    assert "or 0 to keep every one" in result.stderr
    assert "PASS" not in result.stderr
    assert not list((tmp_path / "runs").glob("*/report.json"))

"""prune_runs: the newest records stay, the current run always does, unfinished runs too."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowproof.core.errors import ConfigError
from flowproof.runrecord.store import prune_runs, runs_to_keep


def runs_under(root: Path, *ids: str, recorded: bool = True) -> None:
    for run_id in ids:
        (root / run_id).mkdir(parents=True)
        if recorded:
            (root / run_id / "report.json").write_text("{}")


def test_the_current_run_is_kept_even_when_its_clock_put_it_first(tmp_path: Path) -> None:
    runs_under(tmp_path, "20260101T000001Z-a", "20260101T000002Z-b", "20260101T000003Z-c")
    removed = prune_runs(tmp_path, 1, current="20260101T000001Z-a")
    assert removed == ["20260101T000002Z-b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "20260101T000001Z-a",
        "20260101T000003Z-c",
    ]


def test_a_run_with_no_record_yet_is_left_alone(tmp_path: Path) -> None:
    runs_under(tmp_path, "20260101T000000Z-x", recorded=False)
    runs_under(tmp_path, "20260101T000001Z-a", "20260101T000002Z-b")
    assert prune_runs(tmp_path, 1, current="20260101T000002Z-b") == ["20260101T000001Z-a"]
    assert (tmp_path / "20260101T000000Z-x").is_dir()


def test_keep_none_removes_nothing(tmp_path: Path) -> None:
    runs_under(tmp_path, "20260101T000001Z-a", "20260101T000002Z-b")
    assert prune_runs(tmp_path, None, current="20260101T000002Z-b") == []


@pytest.mark.parametrize(
    ("value", "keep"), [(None, 50), ("", 50), ("0", None), ("7", 7), (" 12 ", 12)]
)
def test_keep_runs_is_read_from_the_environment(value: str | None, keep: int | None) -> None:
    environ = {} if value is None else {"FLOWPROOF_KEEP_RUNS": value}
    assert runs_to_keep(environ) == keep


def test_a_negative_keep_runs_is_refused() -> None:
    with pytest.raises(ConfigError, match="or 0 to keep every one"):
        runs_to_keep({"FLOWPROOF_KEEP_RUNS": "-3"})

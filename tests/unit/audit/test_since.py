"""`flowproof audit --since`: the comparison of two audit tables, and which run a RUN_ID or a
DATE names. Pure functions, so every case is a few rows or records built here."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from flowproof.audit.since import baseline_index, compare, parse_moment
from flowproof.audit.summarize import ControlRow, latest_rows
from flowproof.core.errors import ConfigError
from flowproof.runrecord.model import FlowVerdict, RunRecord
from tests.unit.report.builders import make_flow, make_record


def row(control: str, verdict: FlowVerdict, run_id: str) -> ControlRow:
    return ControlRow(
        id=control,
        verdict=verdict,
        lanes=("reply",),
        containment="not engaged",
        run_id=run_id,
        run_at="2026-11-29T10:15:00Z",
        spec="specs/booking.yaml",
        flow="books",
    )


def ids(rows: Any) -> list[str]:
    return [item.id for item in rows]


def test_added_removed_and_changed_between_two_tables() -> None:
    then = [row("sec.a", "pass", "r1"), row("sec.b", "pass", "r1"), row("sec.c", "pass", "r1")]
    now = [
        row("sec.a", "pass", "r3"),
        row("sec.b", "fail", "r3"),
        row("sec.c", "pass", "r2"),  # evidenced by a run since, but not by the latest
        row("sec.d", "pass", "r3"),
    ]
    changes = compare(then, now, baseline="r1", baseline_at="t1", latest="r3")
    assert (changes.run_id, changes.run_at) == ("r1", "t1")
    assert ids(changes.added) == ["sec.d"]
    assert ids(changes.removed) == ["sec.c"]
    assert changes.removed[0].run_id == "r2"  # today's row: where it was last evidenced
    assert [(c.id, c.was.verdict, c.now.verdict) for c in changes.changed] == [
        ("sec.b", "pass", "fail")
    ]
    assert changes.changed[0].was.run_id == "r1" and changes.changed[0].now.run_id == "r3"
    assert not changes.none


def test_the_same_table_compared_with_itself_changes_nothing() -> None:
    # Even a control the baseline run itself did not evidence (sec.old, from r1) is not
    # "removed" when no run followed the baseline.
    table = [row("sec.a", "fail", "r2"), row("sec.old", "pass", "r1")]
    changes = compare(table, table, baseline="r2", baseline_at="t2", latest="r2")
    assert changes.none
    assert (changes.added, changes.removed, changes.changed) == ((), (), ())


def test_a_control_the_baseline_run_had_already_left_out_is_not_removed_since() -> None:
    # sec.gone: last evidenced by r1, so absent from r2, the baseline, and from r3, the latest.
    # sec.left: evidenced by r2, the baseline, absent from r3: removed since.
    then = [row("sec.gone", "pass", "r1"), row("sec.left", "pass", "r2")]
    changes = compare(then, then, baseline="r2", baseline_at="t2", latest="r3")
    assert ids(changes.removed) == ["sec.left"]


def test_a_removed_control_is_not_also_a_changed_verdict() -> None:
    then = [row("sec.a", "pass", "r1")]
    now = [row("sec.a", "fail", "r2")]
    changes = compare(then, now, baseline="r1", baseline_at="t1", latest="r3")
    assert ids(changes.removed) == ["sec.a"] and changes.changed == ()


def test_a_control_whose_verdict_came_back_is_unchanged() -> None:
    then = [row("sec.a", "pass", "r1")]
    now = [row("sec.a", "pass", "r3")]  # it failed in r2, and passes again in the latest run
    assert compare(then, now, baseline="r1", baseline_at="t1", latest="r3").none


def record(run_id: str, started_at: str, *controls: tuple[str, FlowVerdict]) -> RunRecord:
    flows = [
        make_flow(
            name=control,
            reasons=["failed"] if verdict == "fail" else [],
            control={
                "id": control,
                "verdict": verdict,
                "lanes": ["reply"],
                "containment": "not engaged",
                "evidence": {
                    "spec": "specs/booking.yaml",
                    "turns": {"served": 3, "recorded": 3},
                    "failed_steps": [],
                },
            },
        )
        for control, verdict in controls
    ]
    return RunRecord.model_validate(
        {**make_record(flows), "run_id": run_id, "started_at": started_at}
    )


RUNS = [
    record("20261129T100000Z-aaaaaa", "2026-11-29T10:00:00Z", ("sec.a", "pass")),
    record("20261130T100000Z-bbbbbb", "2026-11-30T10:00:00Z", ("sec.b", "fail")),
    record("20261201T100000Z-cccccc", "2026-12-01T10:00:00Z", ("sec.a", "fail")),
]


def test_the_table_as_of_a_run_keeps_what_earlier_runs_evidenced() -> None:
    assert [(r.id, r.verdict, r.run_id[-6:]) for r in latest_rows(RUNS[:2])] == [
        ("sec.a", "pass", "aaaaaa"),
        ("sec.b", "fail", "bbbbbb"),
    ]
    assert [(r.id, r.verdict) for r in latest_rows(RUNS)] == [("sec.a", "fail"), ("sec.b", "fail")]


@pytest.mark.parametrize(
    ("since", "index"),
    [
        ("20261130T100000Z-bbbbbb", 1),  # a run id
        ("2026-11-30T10:00:00Z", 1),  # exactly when a run started: that run
        ("2026-11-30T09:59:59Z", 0),  # a second before: the run before it
        ("2026-11-30", 0),  # a date is its midnight, UTC
        ("2026-12-01", 1),
        ("2026-12-01T11:00:00+01:00", 2),  # 10:00 UTC, the moment the third run started
        ("2026-12-01T10:59:59+01:00", 1),
        ("2026-12-01T10:00:00", 2),  # no zone: UTC
        ("2027-01-01", 2),  # after every run: the latest
    ],
)
def test_since_names_a_run_by_id_or_by_the_last_start_at_or_before_a_date(
    since: str, index: int
) -> None:
    assert baseline_index(RUNS, since, "runs") == index


def test_an_unknown_run_id_names_the_runs_dir_and_how_to_list_it() -> None:
    with pytest.raises(ConfigError) as raised:
        baseline_index(RUNS, "20261130T100000Z-ffffff", ".flowproof/runs")
    message = str(raised.value)
    assert "no run '20261130T100000Z-ffffff' under .flowproof/runs" in message
    assert "`ls .flowproof/runs`" in message and "ISO date" in message


def test_a_date_before_every_run_says_when_the_first_started() -> None:
    with pytest.raises(ConfigError) as raised:
        baseline_index(RUNS, "2026-11-28", "ci/runs")
    assert str(raised.value) == (
        "--since '2026-11-28': no run under ci/runs started at or before "
        "2026-11-28T00:00:00+00:00; the first of its 3 runs, 20261129T100000Z-aaaaaa, "
        "started at 2026-11-29T10:00:00Z (the run ids are the directory names: `ls ci/runs`)"
    )


def test_no_runs_at_all_is_an_error_for_a_date_too() -> None:
    with pytest.raises(ConfigError, match="it holds no run records"):
        baseline_index([], "2026-11-28", "runs")


def test_parse_moment() -> None:
    assert parse_moment("2026-12-01") == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_moment("2026-12-01T08:00:00Z") == datetime(2026, 12, 1, 8, tzinfo=UTC)
    assert parse_moment("yesterday") is None
    assert parse_moment("20261129T101500Z-a1b2c3") is None  # a run id is not a date

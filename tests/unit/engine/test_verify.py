"""The pure parts of `record --verify`: tomorrow's zone and the block it prints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from flowproof.engine.replayability import Finding, Sighting
from flowproof.engine.verify import Tomorrow, Verification, tomorrow


@pytest.mark.parametrize("hour", [0, 5, 11, 12, 13, 23])
def test_tomorrows_zone_has_another_date_than_utc_and_the_machine(hour: int) -> None:
    now = datetime(2026, 12, 2, hour, 30, tzinfo=UTC)  # a machine on UTC
    when = tomorrow(now)
    utc_date = now.date().isoformat()
    assert when.local_date != utc_date
    offset = 14 if when.zone == "Etc/GMT-14" else -12
    assert (now + timedelta(hours=offset)).date().isoformat() == when.local_date


def test_tomorrows_zone_avoids_the_machines_date_first() -> None:
    # 12:30 UTC on the 2nd is the 3rd at UTC+14 (the machine, and the zone 14 hours ahead) and
    # the 2nd at UTC-12: only the zone behind has a date the agent did not record on.
    now = datetime(2026, 12, 2, 12, 30, tzinfo=UTC).astimezone(timezone(timedelta(hours=14)))
    assert tomorrow(now) == Tomorrow("Etc/GMT+12", "2026-12-02")


def test_tomorrows_zone_avoids_both_dates_when_it_can() -> None:
    # 11:30 UTC is 23:30 at the machine's UTC+12: the 2nd there and in UTC; 14 hours ahead is
    # the 3rd.
    now = datetime(2026, 12, 2, 11, 30, tzinfo=UTC).astimezone(timezone(timedelta(hours=12)))
    assert tomorrow(now) == Tomorrow("Etc/GMT-14", "2026-12-03")


def test_a_failed_verification_prints_the_whole_lines_the_spec_needs() -> None:
    found = Verification(
        Path("specs/notes.yaml"),
        Tomorrow("Etc/GMT-14", "2026-12-03"),
        findings=[
            Finding(
                "the date changed",
                (Sighting(1, "messages[0].content", "2026-12-03"),),
                normalize="date",
            )
        ],
        tools=["exec_command"],
        normalized=("cwd",),
        ignored=("metadata.user_id",),
    )
    assert not found.passed
    assert found.render()[1:] == [
        "  the date changed: request 1 at messages[0].content = '2026-12-03'",
        "      → normalize: [date]",
        "  the output of tool exec_command differs between runs",
        "Declare them in the spec (docs/specs.md):",
        "  normalize: [cwd, date]",
        "  ignore_fields: [metadata.user_id]",
        "  tools:",
        "    - name: exec_command",
        "      result: <the output the agent should see>",
        "then record again: the trace holds each output as it was recorded",
    ]


def test_a_passing_verification_says_so_in_one_line() -> None:
    found = Verification(Path("specs/notes.yaml"), Tomorrow("Etc/GMT+12", "2026-12-01"))
    assert found.passed
    (line,) = found.render()
    assert line.endswith("TZ=Etc/GMT+12 (local date 2026-12-01) and no upstream: it replays")


def test_a_moved_directory_the_spec_opted_out_of_takes_the_opt_out_back() -> None:
    """`no-cwd` beside `cwd` would be a spec error: the printed line drops the opt-out."""
    found = Verification(
        Path("specs/notes.yaml"),
        Tomorrow("Etc/GMT-14", "2026-12-03"),
        findings=[
            Finding(
                "the working directory moved",
                (Sighting(1, "messages[0].content", "/elsewhere/app"),),
                normalize="cwd",
            )
        ],
        normalized=("date", "no-cwd"),
    )
    assert found.render()[-1] == "  normalize: [date, cwd]"

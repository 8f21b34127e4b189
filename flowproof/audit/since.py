"""`flowproof audit --since RUN_ID|DATE`: what changed between the audit as of an earlier run and
the audit today.

The audit as of a run is the table `audit` would have printed right after that run: each
control's latest verdict among the runs up to and including it (the same rule as today's table,
so a control a partial run left out keeps its earlier verdict). Against today's table:

- added: controls today's table has and the baseline's had not (first evidenced since);
- removed: controls that the baseline run, or a run since, evidenced and the latest run did not
  (its spec is gone, its flow no longer declares `control:`, or the latest run did not run that
  spec). Today's table still shows their last verdict, as it always has; a run's record cannot
  tell a deleted spec from one it was not asked to run, so compare runs of the whole suite. A
  control the baseline run had already left out is not removed since: it was gone before;
- verdict changed: controls in both whose verdict differs, was → now (a removed control is
  listed as removed only).

Pure functions over run records already read and rows already summarized: reading the runs
directory is the CLI's job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from flowproof.audit.summarize import ControlRow
from flowproof.core.errors import ConfigError
from flowproof.runrecord.model import RunRecord


@dataclass(frozen=True, slots=True)
class Change:
    """A control whose verdict differs between the baseline and today."""

    was: ControlRow
    now: ControlRow

    @property
    def id(self) -> str:
        return self.now.id


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed since the baseline run; each tuple sorted by control id."""

    run_id: str
    """The baseline run."""
    run_at: str
    added: tuple[ControlRow, ...]
    """Today's rows of the controls first evidenced after the baseline."""
    removed: tuple[ControlRow, ...]
    """Today's rows (the last verdict, and the run that gave it) of the controls the baseline
    run or a run since evidenced, and the latest run did not."""
    changed: tuple[Change, ...]

    @property
    def none(self) -> bool:
        return not (self.added or self.removed or self.changed)


def baseline_index(records: Sequence[RunRecord], since: str, where: str) -> int:
    """The position in `records` (oldest first) of the run `since` names: a run id, else an ISO
    date or time, which names the last run started at or before it (a date is its midnight, a
    time without a zone is UTC). `where` (the runs directory) only words the errors."""
    ids = [record.run_id for record in records]
    if since in ids:
        return ids.index(since)
    moment = parse_moment(since)
    if moment is None:
        raise ConfigError(
            f"--since {since!r}: no run {since!r} under {where}, and not an ISO date or time "
            f"(2026-12-01, 2026-12-01T08:00:00Z); the run ids are the directory names there "
            f"(`ls {where}`), and `flowproof audit` names the run of each control"
        )
    started = [i for i, record in enumerate(records) if _started(record) <= moment]
    if not started:
        first = (
            f"the first of its {len(records)} runs, {records[0].run_id}, started at "
            f"{records[0].started_at} (the run ids are the directory names: `ls {where}`)"
            if records
            else "it holds no run records"
        )
        raise ConfigError(
            f"--since {since!r}: no run under {where} started at or before "
            f"{moment.isoformat()}; {first}"
        )
    return started[-1]


def parse_moment(text: str) -> datetime | None:
    """An ISO 8601 date or date and time as an aware datetime (UTC unless it says), or None."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def compare(
    then: Sequence[ControlRow],
    now: Sequence[ControlRow],
    *,
    baseline: str,
    baseline_at: str,
    latest: str,
) -> Changes:
    """What changed from the baseline's table `then` to today's table `now` (both sorted by
    control id); `baseline` and `latest` are the run ids of the baseline run and the latest run,
    `baseline_at` when the baseline started."""
    was = {row.id: row for row in then}
    added = tuple(row for row in now if row.id not in was)
    removed = tuple(
        row
        for row in now
        if row.id in was
        and row.run_id != latest
        # Evidenced by the baseline run or a run since: a control the baseline run itself had
        # already left out was gone (or not run) before the baseline, not since.
        and (row.run_id != was[row.id].run_id or row.run_id == baseline)
    )
    gone = {row.id for row in removed}
    changed = tuple(
        Change(was[row.id], row)
        for row in now
        if row.id in was and row.id not in gone and row.verdict != was[row.id].verdict
    )
    return Changes(baseline, baseline_at, added, removed, changed)


def _started(record: RunRecord) -> datetime:
    moment = parse_moment(record.started_at)
    if moment is None:
        raise ConfigError(
            f"run {record.run_id}: its started_at {record.started_at!r} is not an ISO time, "
            "so --since cannot place it; give --since a run id instead"
        )
    return moment

"""`flowproof report --merge`: the run records of a suite's shards as the one record an unsharded
run would have written.

Shards partition the flows by spec path (`--shard K/N`), so merging puts the flows and the
configuration errors back in discovery order (by spec path, the order `find_specs` walks a
directory), spans the earliest start to the latest end, and takes the exit code a sequential
run would have had: 2 when any spec could not run, else 1 when any flow failed, else 0 (an
interrupted or crashed shard keeps its own code, the highest winning).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

from flowproof.core.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_PASSED, RunRecordError
from flowproof.runrecord.model import RunRecord


def merge_records(records: Sequence[RunRecord]) -> RunRecord:
    if not records:
        raise RunRecordError("give the run records of the shards to merge")
    modes = {record.mode for record in records}
    if len(modes) > 1:
        raise RunRecordError(
            f"cannot merge a record with a replay run ({', '.join(sorted(modes))}): the shards "
            "of one suite run in one mode"
        )
    first = records[0]
    flows = sorted((f for r in records for f in r.flows), key=lambda f: PurePath(f.spec))
    errors = sorted((e for r in records for e in r.errors), key=lambda e: PurePath(e.spec or ""))
    return first.model_copy(
        update={
            "run_id": "+".join(record.run_id for record in records),
            "started_at": min(record.started_at for record in records),
            "ended_at": max(record.ended_at for record in records),
            "exit_code": _exit_code(records, bool(errors), any(f.verdict == "fail" for f in flows)),
            "errors": errors,
            "flows": flows,
            "internal_error": next((r.internal_error for r in records if r.internal_error), None),
        }
    )


def _exit_code(records: Sequence[RunRecord], errors: bool, failed: bool) -> int:
    abnormal = [r.exit_code for r in records if r.exit_code > EXIT_CONFIG]
    if abnormal:
        return max(abnormal)
    return EXIT_CONFIG if errors else EXIT_FAILED if failed else EXIT_PASSED

"""`report --json`: the reports written and the flows counted."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from flowproof.report.flowfacts import FlowCounts, flow_counts
from flowproof.runrecord.base import RecordModel

if TYPE_CHECKING:
    from flowproof.runrecord.model import RunRecord


class WrittenReport(RecordModel):
    kind: Literal["html", "markdown", "junit"]
    path: str
    """As given on the command line."""


class ReportDocument(RecordModel):
    """What `flowproof report --json` prints: which run record was rendered, and where."""

    run_id: str
    """The run rendered (with --merge: the first shard's)."""
    mode: Literal["record", "replay"]
    run_exit_code: int
    """The exit code the run itself ended with (not this command's)."""
    sources: list[str]
    """The run records read (report.json files): several with --merge."""
    merged: bool
    written: list[WrittenReport]
    """The report files written; empty when none was asked for."""
    flows: FlowCounts


def report_document(
    record: RunRecord, sources: Sequence[Path], written: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    document = ReportDocument(
        run_id=record.run_id,
        mode=record.mode,
        run_exit_code=record.exit_code,
        sources=[str(source) for source in sources],
        merged=len(sources) > 1,
        written=[WrittenReport.model_validate({"kind": k, "path": p}) for k, p in written],
        flows=flow_counts(record),
    )
    return document.model_dump(mode="json")

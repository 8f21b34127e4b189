"""Run records → one row per control: the latest verdict, what it asserted, what enforced it.

A control stands out when its latest run failed, or when it asserts egress but its run was not
contained: a pass that nothing enforced is not the same evidence as a certified one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flowproof.runrecord.model import ControlRecord, FlowRecord, FlowVerdict, RunRecord
from flowproof.runrecord.store import RECORD_FILE, load_run_record

CONTAINED = "contained"


@dataclass(frozen=True, slots=True)
class ControlRow:
    id: str
    verdict: FlowVerdict
    lanes: tuple[str, ...]
    containment: str
    run_id: str
    run_at: str
    spec: str
    flow: str

    @property
    def attention(self) -> str:
        """Why a reviewer should look at this row, or "" when it is a plain pass."""
        if self.verdict != "pass":
            return "latest run failed"
        if "egress" in self.lanes and not self.containment.startswith(CONTAINED):
            return "asserts egress but was not contained"
        return ""


def load_runs(runs_dir: Path) -> list[RunRecord]:
    """Every run record under `runs_dir`, oldest first (run ids sort by time)."""
    paths = sorted(runs_dir.glob(f"*/{RECORD_FILE}")) if runs_dir.is_dir() else []
    return [load_run_record(path) for path in paths]


def latest_rows(records: Sequence[RunRecord]) -> list[ControlRow]:
    """Each control's row from the last of `records` (oldest first) that evidences it, sorted
    by control id."""
    latest: dict[str, ControlRow] = {}
    for record in records:  # later records overwrite earlier ones
        for flow in record.flows:
            if flow.control:
                latest[flow.control.id] = _row(record, flow, flow.control)
    return [latest[key] for key in sorted(latest)]


def summarize(runs_dir: Path) -> tuple[list[ControlRow], int]:
    """(rows sorted by control id, number of run records read)."""
    records = load_runs(runs_dir)
    return latest_rows(records), len(records)


def _row(record: RunRecord, flow: FlowRecord, control: ControlRecord) -> ControlRow:
    return ControlRow(
        id=control.id,
        verdict=control.verdict,
        lanes=tuple(control.lanes),
        containment=control.containment,
        run_id=record.run_id,
        run_at=record.started_at,
        spec=flow.spec,
        flow=flow.name,
    )

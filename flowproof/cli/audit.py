"""`flowproof audit`: print the controls summary, optionally as HTML / markdown files, as a JSON
document on stdout, and what changed since an earlier run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from flowproof.audit.render import render
from flowproof.audit.since import Changes, baseline_index, compare
from flowproof.audit.summarize import ControlRow, latest_rows, load_runs
from flowproof.cli.output import emit, json_wanted, out
from flowproof.core.files import write_text_atomic
from flowproof.core.words import plural
from flowproof.guards.workflow_commands import quoted
from flowproof.runrecord.model import RunRecord
from flowproof.runrecord.store import runs_dir


def audit_command(
    runs_dir_given: str | None,
    html: str | None,
    markdown: str | None,
    since: str | None = None,
) -> None:
    root = runs_dir(runs_dir_given, os.environ)
    records = load_runs(root)
    rows = latest_rows(records)
    changes = _changes(records, rows, since, str(root)) if since is not None else None
    if html:
        write_text_atomic(Path(html), render(rows, len(records), "audit.html.j2", changes))
    if markdown:
        write_text_atomic(Path(markdown), render(rows, len(records), "audit.md.j2", changes))
    if json_wanted():
        from flowproof.audit.schema import audit_document

        emit(audit_document(rows, len(records), str(root), changes).model_dump(mode="json"))
    _print_rows(rows, len(records), root)
    if changes:
        _print_changes(changes)
    # Exit 1 when any control needs attention, so CI can gate on the audit itself. What changed
    # since a baseline does not count: a fixed or newly failing control already shows in `rows`.
    sys.exit(1 if any(row.attention for row in rows) else 0)


def _changes(records: list[RunRecord], rows: list[ControlRow], since: str, where: str) -> Changes:
    index = baseline_index(records, since, where)
    return compare(
        latest_rows(records[: index + 1]),
        rows,
        baseline=records[index].run_id,
        baseline_at=records[index].started_at,
        latest=records[-1].run_id,
    )


def _print_rows(rows: list[ControlRow], runs: int, root: Path) -> None:
    if not rows:
        out(f"no controls found in {plural(runs, 'run record')} under {root}")
        return
    out(f"{plural(len(rows), 'control')} (latest verdict each, from {runs} runs):")
    for row in rows:
        mark = "!" if row.attention else " "
        note = f"  ← {row.attention}" if row.attention else ""
        out(
            f"{mark} {quoted(row.id):<32} {row.verdict.upper():<5} "
            f"lanes: {', '.join(row.lanes):<28} containment: {quoted(row.containment):<12} "
            f"run {quoted(row.run_id)}{note}"
        )


def _print_changes(changes: Changes) -> None:
    out()
    if changes.none:
        out(f"no change since run {quoted(changes.run_id)} ({changes.run_at})")
        return
    out(f"since run {quoted(changes.run_id)} ({changes.run_at}):")
    for row in changes.added:
        out(
            f"  added            {quoted(row.id):<32} {row.verdict.upper():<5} "
            f"run {quoted(row.run_id)}"
        )
    for row in changes.removed:
        out(
            f"  removed          {quoted(row.id):<32} {row.verdict.upper():<5} "
            f"last evidenced by run {quoted(row.run_id)}"
        )
    for change in changes.changed:
        out(
            f"  verdict changed  {quoted(change.id):<32} "
            f"{change.was.verdict.upper()} → {change.now.verdict.upper()}  "
            f"(was run {quoted(change.was.run_id)}, now run {quoted(change.now.run_id)})"
        )

"""`flowproof report [RUN]`: render a run record (default: the latest) as HTML, markdown, JUnit."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from flowproof.cli.output import out
from flowproof.engine.runrecord import RUNS_DIR, latest_run, load_run_record
from flowproof.errors import FlowproofError, TraceError

NO_OUTPUT = "give at least one report to write: --html FILE, --markdown FILE or --junit FILE"


def report_command(
    run: str | None, html: str | None, markdown: str | None, junit: str | None
) -> None:
    """Exit 0 with every asked-for file written; 2 (with a message) when the run record cannot
    be found or read, or a file cannot be written; a usage error when no output is given."""
    if not (html or markdown or junit):
        raise click.UsageError(NO_OUTPUT)
    from flowproof.report.render import write_reports

    try:
        path = resolve_run(run)
        record = load_run_record(path)
    except FlowproofError as exc:
        out(f"error: {exc}")
        sys.exit(2)
    try:
        write_reports(record, html=html, markdown=markdown, junit=junit)
    except FlowproofError as exc:
        out(f"error: {path}: {exc}")
        sys.exit(2)
    except OSError as exc:
        out(f"error: cannot write the report {exc.filename}: {exc.strerror}")
        sys.exit(2)
    for kind, written in (("html", html), ("markdown", markdown), ("junit", junit)):
        if written:
            out(f"{kind} report: {written}")


def resolve_run(run: str | None, root: Path = RUNS_DIR) -> Path:
    """RUN as given: a report.json, a run directory, or a run id under `root`; none: the latest."""
    if run is None:
        return latest_run(root)
    given = Path(run)
    if given.exists():
        return given
    by_id = root / run / "report.json"
    if by_id.is_file():
        return by_id
    known = _run_ids(root)
    hint = f"; the latest is {known[-1]}" if known else f"; there are none under {root}"
    raise TraceError(f"{run}: no such run record (not a file, a directory or a run id{hint})")


def _run_ids(root: Path) -> list[str]:
    return sorted(p.parent.name for p in root.glob("*/report.json")) if root.is_dir() else []

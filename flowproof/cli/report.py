"""`flowproof report [RUN]`: render a run record (default: the latest) as HTML, markdown, JUnit.
With `--json`, which run records were read and which files written, as one document on stdout
(docs/schemas/report.schema.json); `--json` alone writes no file."""

from __future__ import annotations

import os
from pathlib import Path

import click

from flowproof.cli.output import emit, json_wanted, out
from flowproof.core.errors import RunRecordError
from flowproof.runrecord.store import RECORD_FILE, latest_run, load_run_record, run_ids, runs_dir

NO_OUTPUT = (
    "give at least one report to write: --html FILE, --markdown FILE or --junit FILE "
    "(or --json, to print what the run record holds)"
)


def report_command(
    runs: tuple[str, ...],
    html: str | None,
    markdown: str | None,
    junit: str | None,
    runs_dir_given: str | None = None,
) -> None:
    """Exit 0 with every asked-for file written; 2 (with a message) when a run record cannot
    be found or read, or a file cannot be written; a usage error when no output is given
    (`--json` is one: it prints what was read and written). Several `runs` (the shards of a
    suite) are merged into one record first."""
    if not (html or markdown or junit or json_wanted()):
        raise click.UsageError(NO_OUTPUT)
    from flowproof.report.render import write_reports
    from flowproof.runrecord.merge import merge_records

    root = runs_dir(runs_dir_given, os.environ)
    paths = [resolve_run(run, root) for run in runs] or [resolve_run(None, root)]
    records = [load_run_record(path) for path in paths]
    record = records[0] if len(records) == 1 else merge_records(records)
    write_reports(record, html=html, markdown=markdown, junit=junit)  # ConfigError if unwritable
    written = [
        (kind, path)
        for kind, path in (("html", html), ("markdown", markdown), ("junit", junit))
        if path
    ]
    for kind, path in written:
        out(f"{kind} report: {path}")
    if json_wanted():
        from flowproof.documents.report import report_document

        emit(report_document(record, [_record_file(path) for path in paths], written))


def _record_file(path: Path) -> Path:
    """The report.json a RUN given as a run directory names."""
    return path / RECORD_FILE if path.is_dir() else path


def resolve_run(run: str | None, root: Path) -> Path:
    """RUN as given: a report.json, a run directory, or a run id under `root`; none: the latest."""
    if run is None:
        return latest_run(root)
    given = Path(run)
    if given.exists():
        return given
    by_id = root / run / RECORD_FILE
    if by_id.is_file():
        return by_id
    known = run_ids(root)
    hint = f"; the latest is {known[-1]}" if known else f"; there are none under {root}"
    raise RunRecordError(f"{run}: no such run record (not a file, a directory or a run id{hint})")

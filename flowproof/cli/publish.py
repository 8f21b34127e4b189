"""After a run: the report files asked for, and, inside GitHub Actions, the job summary and
`::error` annotations. Everything here reads the run record, never live objects."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from flowproof.cli.output import annotate_error, out
from flowproof.core.errors import ConfigError
from flowproof.guards.redaction import REDACT
from flowproof.runrecord.model import RunRecord


def publish(record: RunRecord, reports: Mapping[str, str | None]) -> None:
    wanted = {kind: path for kind, path in reports.items() if path}
    if wanted:
        from flowproof.report.render import write_reports

        write_reports(
            record,
            html=wanted.get("html"),
            markdown=wanted.get("markdown"),
            junit=wanted.get("junit"),
        )
        for kind, path in wanted.items():
            out(f"{kind} report: {path}")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        _github(record)


def _github(record: RunRecord) -> None:
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        from flowproof.report.render import render_markdown

        try:
            with Path(summary_path).open("a", encoding="utf-8") as handle:
                handle.write(REDACT(render_markdown(record)) + "\n")
        except OSError as exc:
            raise ConfigError(
                f"cannot append the job summary to GITHUB_STEP_SUMMARY={summary_path}: "
                f"{exc.strerror}"
            ) from None
    for error in record.errors:
        if error.spec:
            annotate_error(error.spec, error.line, error.message)
    for flow in record.flows:
        if flow.verdict != "fail":
            continue
        failed_steps = [s for s in flow.steps if s.passed is False and s.line]
        if failed_steps:
            for step in failed_steps:
                annotate_error(step.file, step.line, step.message)
        else:
            annotate_error(flow.spec, None, flow.reasons[0] if flow.reasons else "failed")

"""`flowproof run` and `flowproof record`: find the specs, run each flow, print, exit."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flowproof import __version__
from flowproof.cli.output import indent, out
from flowproof.cli.publish import publish
from flowproof.engine.outcome import FlowOutcome, Mode, Summary
from flowproof.engine.run import run_flow
from flowproof.engine.runrecord import flow_entry, load_run_record, write_run_record
from flowproof.engine.tracediff import diff_traces
from flowproof.errors import FlowproofError
from flowproof.spec.load import load_spec
from flowproof.spec.suite import SUITE_FILE, find_suite
from flowproof.trace.store import load_trace

DEFAULT_PATH = "specs"


def run_flows(
    paths: tuple[str, ...],
    mode_name: str,
    show_diff: bool = False,
    reports: Mapping[str, str | None] | None = None,
) -> None:
    mode = Mode(mode_name)
    try:
        specs = find_specs(paths or (DEFAULT_PATH,))
    except FlowproofError as exc:
        out(f"error: {exc}")
        sys.exit(2)
    out(f"flowproof {__version__} · {mode.value} · {len(specs)} flow{'s' * (len(specs) != 1)}")
    started = datetime.now(UTC)
    summary, entries, secrets = asyncio.run(_run_all(specs, mode, show_diff))
    passed = sum(flow.passed for flow in summary.flows)
    failed = len(summary.flows) - passed
    tail = f", {len(summary.errors)} not run (configuration errors)" if summary.errors else ""
    out(f"\nflows: {passed} passed, {failed} failed{tail}")
    record_path = write_run_record(summary, mode.value, started, entries, os.environ, secrets)
    out(f"run record: {record_path}")
    publish(load_run_record(record_path), reports or {})
    sys.exit(summary.exit_code)


async def _run_all(
    specs: list[Path], mode: Mode, show_diff: bool
) -> tuple[Summary, list[dict[str, Any]], dict[str, str]]:
    summary = Summary()
    entries: list[dict[str, Any]] = []
    secrets: dict[str, str] = {}
    for path in specs:
        try:
            suite = find_suite(path, Path.cwd())
            loaded = load_spec(path)
            started = time.monotonic()
            outcome = await run_flow(loaded, mode, suite=suite)
        except FlowproofError as exc:
            summary.errors.append(str(exc))
            out(f"ERROR {path}\n{indent(str(exc))}")
            continue
        summary.flows.append(outcome)
        entries.append(flow_entry(outcome, loaded, time.monotonic() - started))
        secrets.update(outcome.secrets)
        _print_outcome(outcome)
        if show_diff and outcome.trace_written:
            _print_diff(outcome)
    return summary, entries, secrets


def _print_outcome(flow: FlowOutcome) -> None:
    if flow.mode is Mode.RECORD:
        counts = f"{flow.served} turn{'s' * (flow.served != 1)} recorded"
        if flow.trace_written:
            counts += f" → {flow.trace_written}"
        elif not flow.passed:
            counts += "; no trace written"
    else:
        counts = f"{flow.served} of {flow.recorded} turns served"
    out(f"{'PASS' if flow.passed else 'FAIL'}  {flow.name}  ({flow.spec_path}) · {counts}")
    for reason in flow.reasons:
        out(indent(reason))
    for warning in flow.warnings:
        out(indent(f"warning: {warning}"))


def _print_diff(flow: FlowOutcome) -> None:
    if flow.previous_trace is None:
        out(indent("diff: no previous trace to compare with (first recording)"))
        return
    new = load_trace(flow.trace_written) if flow.trace_written else None
    changes = diff_traces(flow.previous_trace, new) if new else []
    if not changes:
        out(indent("diff: no trajectory changes against the previous trace"))
        return
    out(indent("diff against the previous trace (review before committing):"))
    for change in changes:
        out(indent(f"- {change}", "        "))


def find_specs(paths: Iterable[str]) -> list[Path]:
    """Spec files under each path: a file as given, a directory searched recursively for
    *.yaml / *.yml except the suite settings file."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.suffix in (".yaml", ".yml") and p.name != SUITE_FILE and p.is_file()
                )
            )
        else:
            raise FlowproofError(f"{raw}: no such file or directory")
    if not found:
        raise FlowproofError(f"no specs (*.yaml, *.yml) found in {', '.join(map(str, paths))}")
    return found

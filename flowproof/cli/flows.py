"""`flowproof run` and `flowproof record`: find the specs, run each flow, print, exit.

SIGINT, SIGTERM and SIGHUP interrupt the run rather than kill it: the flow in progress is
cancelled, which stops its agent's whole tree and abandons the upstream calls in flight; the
run record is written with that flow marked `interrupted`, and flowproof exits 128 + the
signal's number (130, 143, 129). A record in progress writes no trace.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from flowproof import __version__
from flowproof.cli.boundary import keep_crash_details_in, one_line
from flowproof.cli.output import REDACT, indent, out
from flowproof.cli.publish import publish
from flowproof.engine.lanes import trace_changes
from flowproof.engine.outcome import ConfigProblem, FlowOutcome, Mode, Summary
from flowproof.engine.run import run_flow
from flowproof.engine.runrecord import flow_record, run_record
from flowproof.engine.strategy import strategy_for
from flowproof.engine.workdir import agent_cwd, refuse_writes_inside
from flowproof.errors import EXIT_INTERNAL, ConfigError, FlowproofError
from flowproof.runrecord.model import FlowRecord
from flowproof.runrecord.store import load_run_record, new_run_id, runs_dir, write_run_record
from flowproof.spec.load import LoadedSpec, load_spec
from flowproof.spec.suite import SUITE_FILE, find_suite
from flowproof.trace.store import load_trace, trace_path_for

DEFAULT_PATH = "specs"
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""What a user, a CI runner cancelling a job, or a closed terminal sends to stop flowproof."""


@dataclass(slots=True)
class _Run:
    """What a run knows so far: enough to write its record even if flowproof crashes."""

    summary: Summary = field(default_factory=Summary)
    flows: list[FlowRecord] = field(default_factory=list)
    interrupted_by: signal.Signals | None = None
    """The first interrupting signal received, if any."""
    runs_root: Path = Path()
    """Where the run records go (kept out of an `agent.cwd`: engine/workdir.py)."""

    @property
    def exit_code(self) -> int:
        """The shell's convention for a command a signal stopped, else the summary's."""
        if self.interrupted_by is not None:
            return 128 + self.interrupted_by.value
        return self.summary.exit_code


def run_flows(
    paths: tuple[str, ...],
    mode_name: str,
    show_diff: bool = False,
    reports: Mapping[str, str | None] | None = None,
    runs_dir: str | None = None,
) -> None:
    mode = Mode(mode_name)
    specs = find_specs(paths or (DEFAULT_PATH,))
    root = _runs_root(runs_dir)
    started = datetime.now(UTC)
    run_id = new_run_id(started)
    keep_crash_details_in(root / run_id)
    out(f"flowproof {__version__} · {mode.value} · {len(specs)} flow{'s' * (len(specs) != 1)}")
    run = _Run(runs_root=root)
    try:
        asyncio.run(_interruptible(specs, mode, show_diff, run))
    except Exception as exc:
        # The record is the evidence of what ran before the crash; the boundary reports it.
        record = run_record(
            run_id,
            mode.value,
            started,
            EXIT_INTERNAL,
            run.flows,
            run.summary.errors,
            internal_error=one_line(exc),
        )
        write_run_record(record, root, REDACT)
        raise
    summary = run.summary
    passed = sum(flow.passed for flow in summary.flows)
    failed = len(summary.flows) - passed
    tail = f", {len(summary.errors)} not run (configuration errors)" if summary.errors else ""
    if run.interrupted_by is not None:
        tail += f"; interrupted by {run.interrupted_by.name}"
    out(f"\nflows: {passed} passed, {failed} failed{tail}")
    record = run_record(run_id, mode.value, started, run.exit_code, run.flows, summary.errors)
    record_path = write_run_record(record, root, REDACT)
    out(f"run record: {record_path}")
    # Reports are rendered from the record as written (redacted), never from the live run.
    publish(load_run_record(record_path), reports or {})
    sys.exit(run.exit_code)


def _runs_root(given: str | None) -> Path:
    root = runs_dir(given, os.environ)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root}: the runs directory is a file; give --runs-dir a directory")
    return root


async def _interruptible(specs: list[Path], mode: Mode, show_diff: bool, run: _Run) -> None:
    """_run_all, cancelled by the first interrupting signal; later ones change nothing, so
    the agent's tree is always stopped to the end (which is bounded: drivers/process.py)."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None  # asyncio.run's task

    def interrupt(received: signal.Signals) -> None:
        if run.interrupted_by is None:
            run.interrupted_by = received
            main.cancel()

    for interrupting in INTERRUPTS:
        loop.add_signal_handler(interrupting, interrupt, interrupting)
    try:
        await _run_all(specs, mode, show_diff, run)
    except asyncio.CancelledError:
        if run.interrupted_by is None:
            raise
        main.uncancel()  # the interrupt is handled: the run ends, and says so
    finally:
        for interrupting in INTERRUPTS:
            loop.remove_signal_handler(interrupting)


async def _run_all(specs: list[Path], mode: Mode, show_diff: bool, run: _Run) -> None:
    for path in specs:
        try:
            suite = find_suite(path, Path.cwd())
            loaded = load_spec(path)
            writes = [("its trace", trace_path_for(path)), ("the run records", run.runs_root)]
            refuse_writes_inside(loaded, agent_cwd(loaded, os.environ), Path.cwd(), writes)
            started = time.monotonic()
            try:
                strategy = strategy_for(mode, loaded, os.environ)
                outcome = await run_flow(loaded, strategy, suite=suite)
            except asyncio.CancelledError:
                _interrupted(run, loaded, mode, time.monotonic() - started)
                raise
        except FlowproofError as exc:
            run.summary.errors.append(ConfigProblem.from_error(exc, path))
            out(f"ERROR {path}\n{indent(str(exc))}")
            continue
        run.summary.flows.append(outcome)
        run.flows.append(flow_record(outcome, loaded, time.monotonic() - started))
        REDACT.hide_all(outcome.secrets)
        _print_outcome(outcome)
        if show_diff and outcome.trace_written:
            _print_diff(outcome)


def _interrupted(run: _Run, loaded: LoadedSpec, mode: Mode, seconds: float) -> None:
    """Record the flow a signal cut short (a cancellation without one is not ours to mark)."""
    if run.interrupted_by is None:
        return
    name = run.interrupted_by.name
    reason = f"interrupted by {name}: flowproof stopped the agent and every process it started"
    if mode is Mode.RECORD:
        reason += "; no trace was written"
    outcome = FlowOutcome(
        spec_path=loaded.path, name=loaded.spec.name, mode=mode, reasons=(reason,)
    )
    record = flow_record(outcome, loaded, seconds)
    run.flows.append(record.model_copy(update={"interrupted": name}))
    out(f"INTERRUPTED  {outcome.name}  ({outcome.spec_path})")
    out(indent(reason))


def _print_outcome(flow: FlowOutcome) -> None:
    tool_calls = f" · {_plural(flow.mcp_calls, 'MCP call')}" if flow.mcp_calls else ""
    if flow.mode is Mode.RECORD:
        counts = f"{flow.served} turn{'s' * (flow.served != 1)} recorded{tool_calls}"
        if flow.trace_written:
            counts += f" → {flow.trace_written}"
        elif not flow.passed:
            counts += "; no trace written"
    else:
        counts = f"{flow.served} of {flow.recorded} turns served{tool_calls}"
    out(f"{'PASS' if flow.passed else 'FAIL'}  {flow.name}  ({flow.spec_path}) · {counts}")
    for reason in flow.reasons:
        out(indent(reason))
    for warning in flow.warnings:
        out(indent(f"warning: {warning}"))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def _print_diff(flow: FlowOutcome) -> None:
    if flow.previous_trace is None:
        out(indent("diff: no previous trace to compare with (first recording)"))
        return
    new = load_trace(flow.trace_written) if flow.trace_written else None
    changes = trace_changes(flow.previous_trace, new) if new else []
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
            raise ConfigError(f"{raw}: no such file or directory")
    if not found:
        raise ConfigError(f"no specs (*.yaml, *.yml) found in {', '.join(map(str, paths))}")
    return found

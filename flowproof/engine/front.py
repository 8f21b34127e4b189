"""The front door: one spec in, its outcome and its flow record out.

    open_flow: find the suite → load the spec → the flow's context (engine/context.py)
               → keep flowproof's files out of `agent.cwd` → the strategy (record or replay)
    run_opened: run_flow → the flow's secrets join its redactor → its flow record

`run_spec` does both. Every way of running a flow goes through here — `flowproof run` and
`record` (which hold a flow between the two halves while it waits for the fixed-port lock), the
Python API's `Flow` (doors/api.py, which the pytest items and `flowproof mcp` run through),
the in-process fixture, and doctor (a spec made in memory, run with a canned
strategy of its own) — so each gets the same guard, the same redaction and the same record.
flowproof's environment is read once, when the flow is opened (host/environ.py), into the
flow's context, which the strategy, the agent driver and the judge read instead; the values
no output may show travel on the same context, in the front door's redactor.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from flowproof.engine.context import FlowContext, flow_context
from flowproof.engine.outcome import FlowOutcome, Mode, Summary
from flowproof.engine.run import AgentDriver, run_flow
from flowproof.engine.runrecord import flow_record, run_record
from flowproof.engine.strategy import Strategy, strategy_for
from flowproof.engine.workdir import refuse_writes_inside
from flowproof.guards.redaction import REDACT, Redactor
from flowproof.host.environ import own_environ
from flowproof.proxy import DEFAULT_UPSTREAM_TIMEOUT
from flowproof.runrecord.model import FlowRecord, RunRecord
from flowproof.runrecord.store import new_run_id, runs_dir
from flowproof.spec.load import LoadedSpec, load_spec
from flowproof.spec.suite import find_suite, refuse_shared_trace
from flowproof.trace.store import trace_path_for


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run a flow, whichever front door asks."""

    mode: Mode = Mode.REPLAY
    keep_matching: bool = False
    """At record: keep the turns that still match the previous trace (engine/strategy.py)."""
    runs_root: Path | None = None
    """Where the run records go; None: `runs_dir(None, environ)` (.flowproof/runs/ or
    FLOWPROOF_RUNS_DIR), as `flowproof run` without --runs-dir."""
    strategy: Strategy | None = None
    """A strategy of the caller's own instead of the mode's: doctor's, which answers every
    model call with canned text and writes nothing."""
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT
    """At record: seconds one upstream answer may take, whole (`record --upstream-timeout`)."""
    redactor: Redactor = field(default_factory=lambda: REDACT)
    """What the flow's never-shown values join: the process's output redactor unless a front
    door brings its own."""


@dataclass(frozen=True, slots=True)
class OpenedFlow:
    """A flow ready to run: its spec loaded and checked, its strategy built."""

    context: FlowContext
    """The environment as it was when the flow was opened, read once, the suite and the spec."""
    strategy: Strategy
    runs_root: Path
    mode: Mode
    started: float = field(default_factory=time.monotonic)
    begun: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def loaded(self) -> LoadedSpec:
        """The spec, which the CLI reads while the flow waits (its fixed port, its name)."""
        return self.context.loaded


@dataclass(frozen=True, slots=True)
class FlowRun:
    """What one flow leaves: the live outcome and its record (redacted when written)."""

    outcome: FlowOutcome
    record: FlowRecord
    opened: OpenedFlow


def open_flow(source: Path | LoadedSpec, options: RunOptions) -> OpenedFlow:
    """`source`: a spec file, or a spec made in memory (doctor's), which has no file and so no
    suite around it. Raises a FlowproofError (a configuration problem) when the flow cannot
    run at all."""
    environ = own_environ()
    root = options.runs_root if options.runs_root is not None else runs_dir(None, environ)
    if isinstance(source, LoadedSpec):
        loaded, suite = source, None
    else:
        refuse_shared_trace(source)
        suite = find_suite(source, Path.cwd())
        loaded = load_spec(source)
    context = flow_context(loaded, suite, environ, options.redactor)
    writes = [("its trace", trace_path_for(loaded.path)), ("the run records", root)]
    refuse_writes_inside(loaded, context.cwd, Path.cwd(), writes)
    started = time.monotonic()
    strategy = options.strategy or strategy_for(
        options.mode, context, options.keep_matching, options.upstream_timeout
    )
    return OpenedFlow(context, strategy, root, options.mode, started)


async def run_opened(opened: OpenedFlow, agent: AgentDriver | None = None) -> FlowRun:
    """`agent`: how the agent is driven (a command or a `url:` service unless given)."""
    outcome = await run_flow(opened.context, opened.strategy, agent)
    # From here on nothing flowproof shows or writes may carry the flow's declared secrets.
    opened.context.redactor.hide_all(outcome.secrets)
    record = flow_record(outcome, opened.loaded, time.monotonic() - opened.started)
    return FlowRun(outcome, record, opened)


async def run_spec(
    source: Path | LoadedSpec, options: RunOptions, agent: AgentDriver | None = None
) -> FlowRun:
    return await run_opened(open_flow(source, options), agent)


def single_run_record(run: FlowRun) -> RunRecord:
    """The run record of a run of one flow (a pytest item, an in-process flow, the Python
    API's `Flow`), not yet redacted."""
    opened = run.opened
    code = Summary([run.record]).exit_code  # what `flowproof run` of this one spec exits with
    begun = opened.begun
    return run_record(new_run_id(begun), opened.mode.value, begun, code, [run.record], [])

"""`flowproof run` and `flowproof record`: find the specs, run each flow, print, exit. With
`--json`, the run record is also printed on stdout, as written
(docs/schemas/run-record.schema.json).

SIGINT, SIGTERM and SIGHUP interrupt the run rather than kill it: the flow in progress is
cancelled, which stops its agent's whole tree and abandons the upstream calls in flight; the
run record is written with that flow marked `interrupted`, and flowproof exits 128 + the
signal's number (130, 143, 129). A record in progress writes no trace.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from flowproof._version import __version__
from flowproof.cli.boundary import keep_crash_details_in
from flowproof.cli.output import emit, json_wanted, out
from flowproof.cli.publish import publish
from flowproof.core.errors import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_PASSED,
    ConfigError,
    FlowproofError,
    one_line,
)
from flowproof.core.tasks import create_task
from flowproof.core.words import plural
from flowproof.engine.front import RunOptions, open_flow, run_opened
from flowproof.engine.outcome import ConfigProblem, FlowOutcome, Mode, Summary
from flowproof.engine.runrecord import flow_record, run_record
from flowproof.guards.redaction import REDACT
from flowproof.proxy import DEFAULT_UPSTREAM_TIMEOUT
from flowproof.report.terminal import error_lines, flow_lines, indent, summary_line
from flowproof.runrecord.model import FlowRecord
from flowproof.runrecord.store import (
    load_run_record,
    new_run_id,
    prune_runs,
    runs_dir,
    runs_to_keep,
    write_run_record,
)
from flowproof.spec.load import LoadedSpec
from flowproof.spec.suite import find_specs

DEFAULT_PATH = "specs"
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""What a user, a CI runner cancelling a job, or a closed terminal sends to stop flowproof."""


@dataclass(slots=True)
class _Run:
    """What a run knows so far: enough to write its record even if flowproof crashes."""

    summary: Summary = field(default_factory=Summary)
    """Every flow's record so far, and the specs that could not run."""
    interrupted_by: signal.Signals | None = None
    """The first interrupting signal received, if any."""
    unverified: bool = False
    """`record --verify` found a new trace that would not replay."""
    runs_root: Path = Path()
    """Where the run records go (kept out of an `agent.cwd`: engine/workdir.py)."""

    @property
    def exit_code(self) -> int:
        """The shell's convention for a command a signal stopped, else the summary's."""
        if self.interrupted_by is not None:
            return 128 + self.interrupted_by.value
        if self.unverified and self.summary.exit_code == EXIT_PASSED:
            return EXIT_FAILED
        return self.summary.exit_code


@dataclass(frozen=True, slots=True)
class _Options:
    """What every flow of one `flowproof run` or `record` is run with."""

    flow: RunOptions
    show_diff: bool = False
    """Print each recorded flow's trajectory changes against its previous trace."""
    jobs: int = 1
    """How many flows may run at once."""


def run_flows(
    paths: tuple[str, ...],
    mode_name: str,
    show_diff: bool = False,
    reports: Mapping[str, str | None] | None = None,
    runs_dir: str | None = None,
    jobs: int = 1,
    shard: str | None = None,
    keep_matching: bool = False,
    verify: bool = False,
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
) -> None:
    mode = Mode(mode_name)
    part = parse_shard(shard) if shard is not None else None
    specs = find_specs(paths or (DEFAULT_PATH,))
    if part is not None:
        specs = in_shard(specs, *part)
    root = _runs_root(runs_dir)
    keep = runs_to_keep(os.environ)  # a bad value is refused before any flow runs
    started = datetime.now(UTC)
    run_id = new_run_id(started)
    keep_crash_details_in(root / run_id)
    out(f"flowproof {__version__} · {mode.value} · {plural(len(specs), 'flow')}")
    run = _Run(runs_root=root)
    flow_options = RunOptions(mode, keep_matching, root, upstream_timeout=upstream_timeout)
    options = _Options(flow_options, show_diff, jobs)
    try:
        asyncio.run(_interruptible(specs, options, run))
    except Exception as exc:
        # The record is the evidence of what ran before the crash; the boundary reports it.
        record = run_record(
            run_id,
            mode.value,
            started,
            EXIT_INTERNAL,
            run.summary.flows,
            run.summary.errors,
            internal_error=one_line(exc),
        )
        write_run_record(record, root, REDACT)
        raise
    if verify and run.interrupted_by is None:
        _verify_new_traces(run)
    summary = run.summary
    record = run_record(run_id, mode.value, started, run.exit_code, summary.flows, summary.errors)
    out(summary_line(record))
    record_path = write_run_record(record, root, REDACT)
    out(f"run record: {record_path}")
    # Reports are rendered from the record as written (redacted), never from the live run;
    # so is the JSON document: the record itself, as written.
    written = load_run_record(record_path)
    publish(written, reports or {})
    prune_runs(root, keep, run_id)
    if json_wanted():
        emit(written.model_dump(mode="json"))
    sys.exit(run.exit_code)


def _verify_new_traces(run: _Run) -> None:
    """`record --verify`: replay each trace just written under tomorrow's conditions."""
    from flowproof.engine.verify import verify_flow  # only `record --verify` pays for it

    for flow in run.summary.flows:
        if flow.trace is None:
            continue
        found = verify_flow(Path(flow.spec), os.environ, Path.cwd())
        for line in found.render():
            out(line)
        run.unverified = run.unverified or not found.passed


def _runs_root(given: str | None) -> Path:
    """The runs directory, refused before any flow runs when no record could be written there
    (only the record at the end of the run would otherwise find out)."""
    root = runs_dir(given, os.environ)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root}: the runs directory is a file; give --runs-dir a directory")
    for part in (root, *root.parents):
        if part.is_symlink() and not part.exists():
            target = os.readlink(part)
            raise ConfigError(
                f"{root}: the runs directory cannot be created: {part} is a symbolic link to "
                f"{target}, which does not exist; create {target}, or give --runs-dir a "
                "directory"
            )
    # Made now, not with the first record at the end: an agent that shows the model its
    # project (Gemini CLI lists the working tree, ignored folders included) then sees the same
    # folders at record and at every replay, a fresh CI checkout's included.
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{root}: the runs directory cannot be created ({exc.strerror}); "
            "give --runs-dir a directory"
        ) from None
    return root


async def _interruptible(specs: list[Path], options: _Options, run: _Run) -> None:
    """_run_all, cancelled by the first interrupting signal; later ones change nothing, so
    the agent's tree is always stopped to the end (which is bounded: host/processes.py)."""
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
        await _run_all(specs, options, run)
    except asyncio.CancelledError:
        if run.interrupted_by is None:
            raise
        main.uncancel()  # the interrupt is handled: the run ends, and says so
    finally:
        for interrupting in INTERRUPTS:
            loop.remove_signal_handler(interrupting)


@dataclass(slots=True)
class _Done:
    """One flow's result, held until every flow discovered before it has been reported, so
    output and the run record keep the discovery order whatever order flows finish in."""

    record: FlowRecord | None = None
    error: ConfigProblem | None = None
    lines: list[str] = field(default_factory=list)


async def _run_all(specs: list[Path], options: _Options, run: _Run) -> None:
    """Up to `jobs` flows at once, each with its own proxy and stand-ins on ephemeral ports.
    Flows that need a fixed port (`proxy_port`, an MCP `port:`, a `url:` service, which owns
    one) take one lock, so they never run beside each other; results are reported in discovery
    order as soon as every earlier flow has been."""
    slots = asyncio.Semaphore(max(1, options.jobs))
    fixed_port = asyncio.Lock()
    done: list[_Done | None] = [None] * len(specs)
    reported = 0

    def report_ready() -> None:
        nonlocal reported
        while reported < len(specs) and (ready := done[reported]) is not None:
            _report(ready, run)
            reported += 1

    crashed: list[Exception] = []
    """A bug in flowproof while running a flow: no flow starts after it, the ones running
    finish and are recorded, and then it is raised (exit 3, cli/boundary.py)."""

    async def one(index: int, path: Path) -> None:
        try:
            async with slots:
                if crashed:
                    return
                done[index] = await _run_one(path, options, run, fixed_port)
        except _CutShort as cut:
            done[index] = cut.done  # the flows a signal stops are reported, and then no more
        except Exception as exc:
            crashed.append(exc)
        report_ready()

    tasks = [
        create_task(one(index, path), name=f"flow-{index}") for index, path in enumerate(specs)
    ]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        report_ready()
        for index in range(reported, len(specs)):  # after an interrupt or a crash: the rest
            if (rest := done[index]) is not None and rest.record is not None:
                _report(rest, run)
    if crashed:
        raise crashed[0]


class _CutShort(Exception):
    """A flow an interrupt cancelled, carrying what to report for it."""

    def __init__(self, done: _Done) -> None:
        super().__init__("interrupted")
        self.done = done


async def _run_one(path: Path, options: _Options, run: _Run, fixed_port: asyncio.Lock) -> _Done:
    try:
        opened = open_flow(path, options.flow)
        try:
            if _needs_fixed_port(opened.loaded):
                async with fixed_port:
                    flow = await run_opened(opened)
            else:
                flow = await run_opened(opened)
        except asyncio.CancelledError:
            seconds = time.monotonic() - opened.started
            cut_short = _interrupted(run, opened.loaded, options.flow.mode, seconds)
            if cut_short is not None:
                raise _CutShort(cut_short) from None
            raise
    except FlowproofError as exc:
        lines = error_lines(str(path), str(exc))
        return _Done(error=ConfigProblem.from_error(exc, path), lines=lines)
    egress = flow.outcome.egress
    fs_report = egress.fs_report if egress is not None else ""  # stderr only, never recorded
    lines = flow_lines(flow.record, options.flow.mode.value, fs_report)
    if options.show_diff and flow.outcome.trace_written:
        lines += _diff_lines(flow.outcome)
    return _Done(flow.record, lines=lines)


def _needs_fixed_port(loaded: LoadedSpec) -> bool:
    agent = loaded.spec.agent
    return (
        agent.proxy_port is not None
        or agent.url is not None
        or any(server.port is not None for server in loaded.spec.mcp)
    )


def _report(done: _Done, run: _Run) -> None:
    if done.error is not None:
        run.summary.errors.append(done.error)
    if done.record is not None:
        run.summary.flows.append(done.record)
    for line in done.lines:
        out(line)


def _interrupted(run: _Run, loaded: LoadedSpec, mode: Mode, seconds: float) -> _Done | None:
    """The flow a signal cut short (a cancellation without one is not ours to mark)."""
    if run.interrupted_by is None:
        return None
    name = run.interrupted_by.name
    reason = f"interrupted by {name}: flowproof stopped the agent and every process it started"
    if mode is Mode.RECORD:
        reason += "; no trace was written"
    outcome = FlowOutcome(
        spec_path=loaded.path, name=loaded.spec.name, mode=mode, reasons=(reason,)
    )
    record = flow_record(outcome, loaded, seconds).model_copy(update={"interrupted": name})
    return _Done(record=record, lines=flow_lines(record, mode.value))


def _diff_lines(flow: FlowOutcome) -> list[str]:
    from flowproof.engine.rerecord import rerecorded  # only `record --diff` pays for it

    if flow.previous_trace is None:
        return [indent("diff: no previous trace to compare with (first recording)")]
    found = rerecorded(flow.previous_trace, flow.lanes, flow.kept_turns)
    kept = [indent(line) for line in found.turns]
    if not found.changes:
        return [*kept, indent("diff: no trajectory changes against the previous trace")]
    lines = [*kept, indent("diff against the previous trace (review before committing):")]
    return lines + [indent(f"- {change}", "        ") for change in found.changes]


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` → (K, N), 1 ≤ K ≤ N; anything else is a usage error."""
    k, _, n = text.partition("/")
    try:
        shard, shards = int(k), int(n)
    except ValueError:
        shard = shards = 0
    if not 1 <= shard <= shards:
        raise ConfigError(f"--shard {text}: give K/N with 1 ≤ K ≤ N, e.g. --shard 2/4")
    return shard, shards


def in_shard(specs: list[Path], shard: int, shards: int) -> list[Path]:
    """The specs of shard `shard` of `shards`: chosen by a hash of each spec's path, so a
    flow stays in its shard when others are added or removed, and the shards are disjoint and
    cover the suite on every machine that discovers the same paths."""
    return [spec for spec in specs if _shard_of(spec, shards) == shard]


def _shard_of(spec: Path, shards: int) -> int:
    digest = hashlib.sha256(spec.as_posix().encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1

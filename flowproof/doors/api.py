"""The Python API: run or record a flow from Python and get a typed result back.

    from flowproof import Flow

    result = Flow("specs/booking.yaml").run()          # replay against the committed trace
    if not result.passed:
        print(result.divergence or result.failed_steps)

A flow runs exactly as `flowproof run` (or `record`) runs it, through the same front door
(engine/front.py): the same proxy, matching, assertions, trace and run record. Nothing here
reads a terminal: the result is built from the flow's run-record entry (runrecord/model.py),
redacted as the written record is, so it holds exactly what the reports show.

Failures of the AGENT (a divergence, a failed step, a crash, a missing trace) are values: the
result's `passed` is False and its fields say why. Failures of the INPUT are exceptions, all of
them `flowproof.core.errors.FlowproofError`: `SpecError` (a spec that cannot be run as written; it
carries `path`, `line` and the fix), `TraceError` (a trace that cannot be read), `ConfigError`
(an unset `${VAR}`, a runs directory that cannot be written, no specs found).

The pytest items (`pytest --flowproof`) run their flows through `Flow`; `flowproof mcp` runs
its specs through it too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flowproof.engine.front import FlowRun, RunOptions, run_spec, single_run_record
from flowproof.engine.outcome import Mode
from flowproof.guards.redaction import REDACT
from flowproof.matching.divergence import Difference, Divergence
from flowproof.proxy import DEFAULT_UPSTREAM_TIMEOUT
from flowproof.runrecord.model import (
    FlowRecord,
    RunRecord,
    StepRecord,
    TimelineRow,
    TrajectoryRecord,
)
from flowproof.runrecord.store import write_run_record
from flowproof.spec.suite import find_specs as _find_specs

__all__ = [
    "Divergence",
    "FieldDifference",
    "Flow",
    "FlowResult",
    "StepVerdict",
    "TraceView",
    "diff_traces",
    "find_specs",
    "show_trace",
]


StepVerdict = StepRecord
"""The verdict of one assertion step (or of the flow-level `strict: true` check): the run
record's own step, read by the names `name`, `kind`, `passed`, `verdict`, `message`,
`observed`, `number`, `line` and `turn`."""

FieldDifference = Difference
"""One field at which the replayed request differs from the recorded one: `path`, `recorded`,
`replayed`, `note` (matching/divergence.py's `Difference`)."""


@dataclass(frozen=True, slots=True)
class FlowResult:
    """What one flow came to: its run-record entry (redacted, as written), read as the
    verdict, why, and where its evidence was written. Every fact but the three this door adds
    (`mode`, `run_record`, `reports`) is read from `record`, so the result cannot say other
    than the record does."""

    record: FlowRecord = field(repr=False)
    """The flow's whole run-record entry (timeline, trajectory, control, ...), redacted."""
    mode: Literal["record", "replay"]
    run_record: Path | None = None
    """The run record (`report.json`) written for this flow; None with `write_record=False`."""
    reports: dict[str, Path] = field(default_factory=dict)
    """The reports asked for, by kind (`html`, `markdown`, `junit`)."""

    @property
    def spec(self) -> Path:
        return Path(self.record.spec)

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def passed(self) -> bool:
        return self.record.verdict == "pass"

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the flow failed, most fundamental first; empty when it passed."""
        return tuple(self.record.reasons)

    @property
    def steps(self) -> tuple[StepVerdict, ...]:
        return tuple(self.record.steps)

    @property
    def failed_steps(self) -> tuple[StepVerdict, ...]:
        return tuple(step for step in self.steps if step.passed is False)

    @property
    def divergence(self) -> Divergence | None:
        """None when every request was served (or the flow failed before any diverged)."""
        return self.record.divergence

    @property
    def turns_served(self) -> int:
        """Model turns served (replay) or recorded (record)."""
        return self.record.turns.served

    @property
    def turns_recorded(self) -> int:
        """Model turns in the trace (replay; 0 at record)."""
        return self.record.turns.recorded

    @property
    def reply(self) -> str | None:
        """The agent's final reply as the model gave it; None when there was none."""
        trajectory = self.record.trajectory
        return trajectory.reply if trajectory else None

    @property
    def trajectory(self) -> TrajectoryRecord | None:
        """What the flow did as the assertions saw it: the tool calls the model asked for, the
        calls executed at MCP servers, the reply; None when the flow never ran."""
        return self.record.trajectory

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self.record.warnings)

    @property
    def trace(self) -> Path | None:
        """The trace a passing record wrote; None at replay."""
        return Path(self.record.trace) if self.record.trace else None

    @classmethod
    def from_record(
        cls,
        flow: FlowRecord,
        mode: Literal["record", "replay"],
        run_record: Path | None = None,
        reports: dict[str, Path] | None = None,
    ) -> FlowResult:
        """The result of a flow as a run record holds it (one written by `flowproof run`
        too: `load_run_record(path).flows`)."""
        return cls(flow, mode, run_record, dict(reports or {}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the flow's run-record entry as `report.json` holds it, with the mode and
        the paths of the run record and the reports (what `flowproof mcp` returns for a flow)."""
        return {
            "mode": self.mode,
            "run_record": str(self.run_record) if self.run_record else None,
            "reports": {kind: str(path) for kind, path in self.reports.items()},
            **self.record.model_dump(mode="json"),
        }


class Flow:
    """One spec, ready to replay (`run`) or record (`record`).

    `runs_dir`: where the run record goes (default: $FLOWPROOF_RUNS_DIR, else
    .flowproof/runs, as `flowproof run`); `write_record=False` writes none (reports, which
    are rendered from it, can then not be asked for). The spec is read when the flow runs, so
    a bad spec raises from `run`/`record`, not from here."""

    def __init__(
        self,
        spec: str | Path,
        *,
        runs_dir: str | Path | None = None,
        write_record: bool = True,
    ) -> None:
        self.spec = Path(spec)
        self.runs_dir = Path(runs_dir) if runs_dir is not None else None
        self.write_record = write_record

    def __repr__(self) -> str:
        return f"Flow({str(self.spec)!r})"

    def run(
        self,
        *,
        html: str | Path | None = None,
        markdown: str | Path | None = None,
        junit: str | Path | None = None,
    ) -> FlowResult:
        """Replay the flow against its trace (never records). Call from synchronous code;
        in a running event loop, await `run_async` instead."""
        return asyncio.run(self.run_async(html=html, markdown=markdown, junit=junit))

    def record(
        self,
        *,
        keep_matching: bool = False,
        upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
        html: str | Path | None = None,
        markdown: str | Path | None = None,
        junit: str | Path | None = None,
    ) -> FlowResult:
        """Record the flow against the real model, as `flowproof record` does: the upstream
        and key come from this process's environment (FLOWPROOF_AGENT_UPSTREAM,
        FLOWPROOF_AGENT_KEY, ...); a passing flow writes its trace beside the spec."""
        return asyncio.run(
            self.record_async(
                keep_matching=keep_matching,
                upstream_timeout=upstream_timeout,
                html=html,
                markdown=markdown,
                junit=junit,
            )
        )

    async def run_async(
        self,
        *,
        html: str | Path | None = None,
        markdown: str | Path | None = None,
        junit: str | Path | None = None,
    ) -> FlowResult:
        reports = self._reports(html, markdown, junit)
        options = RunOptions(Mode.REPLAY, runs_root=self.runs_dir)
        return flow_result(await run_spec(self.spec, options), self.write_record, reports)

    async def record_async(
        self,
        *,
        keep_matching: bool = False,
        upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
        html: str | Path | None = None,
        markdown: str | Path | None = None,
        junit: str | Path | None = None,
    ) -> FlowResult:
        reports = self._reports(html, markdown, junit)
        options = RunOptions(
            Mode.RECORD,
            keep_matching,
            runs_root=self.runs_dir,
            upstream_timeout=upstream_timeout,
        )
        return flow_result(await run_spec(self.spec, options), self.write_record, reports)

    def _reports(
        self, html: str | Path | None, markdown: str | Path | None, junit: str | Path | None
    ) -> dict[str, Path]:
        """The reports asked for, refused before the flow runs when no record is written."""
        given = {"html": html, "markdown": markdown, "junit": junit}
        reports = {kind: Path(path) for kind, path in given.items() if path is not None}
        if reports and not self.write_record:
            raise ValueError("reports are rendered from the run record: keep write_record=True")
        return reports


def flow_result(
    run: FlowRun, write_record: bool = True, reports: dict[str, Path] | None = None
) -> FlowResult:
    """A run of one flow as its front door returns it: its run record redacted (and written
    unless `write_record` is False), the reports asked for rendered from it, and the result
    read from the record's one flow. The Python API and the in-process flow both end here."""
    record = _redacted(single_run_record(run))
    path = write_run_record(record, run.opened.runs_root, REDACT) if write_record else None
    if reports:
        from flowproof.report.render import write_reports  # only a run that asks pays

        write_reports(record, **{kind: str(target) for kind, target in reports.items()})
    (flow,) = record.flows
    return FlowResult.from_record(flow, record.mode, path, reports)


def find_specs(paths: Iterable[str | Path] = ("specs",)) -> list[Path]:
    """The spec files under `paths` as `flowproof run PATHS` finds them: a file as given, a
    directory searched recursively for *.yaml / *.yml (the suite's flowproof.yaml aside).
    Raises ConfigError for a path that does not exist, or when no spec is found."""
    return _find_specs([str(path) for path in paths])


@dataclass(frozen=True, slots=True)
class TraceView:
    """What a trace holds, as the assertions would see it when it is replayed."""

    trace: Path
    turns: int
    """Model turns recorded."""
    trajectory: TrajectoryRecord
    """The tool calls the model asked for, the calls executed at MCP servers, the reply."""
    timeline: tuple[TimelineRow, ...]
    """Every lane's entries: the model turns (their tool calls, results and text), then each
    MCP lane's calls."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace": str(self.trace),
            "turns": self.turns,
            "trajectory": self.trajectory.model_dump(mode="json"),
            "timeline": [row.model_dump(mode="json") for row in self.timeline],
        }


def show_trace(path: str | Path) -> TraceView:
    """The trajectory and timeline of a trace file (a spec's path is taken to mean its trace).
    Raises TraceError when the trace cannot be read."""
    from flowproof.engine import lanes
    from flowproof.engine.runrecord import trajectory_record
    from flowproof.trace.store import load_trace

    trace_path = _trace_file(Path(path))
    trace = load_trace(trace_path)
    lanes.check_lanes(trace, str(trace_path))
    return TraceView(
        trace_path,
        len(trace.turns),
        trajectory_record(lanes.trajectory(trace.lanes)),
        tuple(lanes.timeline(trace.lanes)),
    )


def diff_traces(old: str | Path, new: str | Path) -> tuple[str, ...]:
    """The trajectory changes from trace `old` to trace `new`, as `flowproof diff` prints
    them; empty when the trajectories are the same."""
    from flowproof.engine.lanes import trace_changes
    from flowproof.trace.store import load_trace

    return tuple(trace_changes(load_trace(Path(old)), load_trace(Path(new))))


def _trace_file(path: Path) -> Path:
    from flowproof.spec.suite import is_spec_file
    from flowproof.trace.store import trace_path_for

    return trace_path_for(path) if is_spec_file(path) else path


def _redacted(record: RunRecord) -> RunRecord:
    """The record as it is written: the flow's declared secrets and every record key hidden
    from the whole document (an agent may echo one into a reason or a reply)."""
    text = json.dumps(record.model_dump(mode="json"), ensure_ascii=False)
    return RunRecord.model_validate(json.loads(REDACT(text)))

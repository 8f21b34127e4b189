"""Outcomes → the run record (runrecord/model.py): what every report and `audit` reads.

Built from the outcome's structured fields alone (a verdict's expected/observed, a divergence's
path and both values), so no reader ever has to parse a sentence back.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from flowproof._version import __version__
from flowproof.assertions.evaluate import Verdict, at_tool_boundary
from flowproof.assertions.grammar import ToolCallAssertion
from flowproof.assertions.kinds import step_kind
from flowproof.assertions.trajectory import Trajectory
from flowproof.engine import lanes
from flowproof.engine.outcome import ConfigProblem, FlowOutcome
from flowproof.runrecord.model import (
    ControlEvidence,
    ControlRecord,
    ErrorRecord,
    FlowRecord,
    FlowVerdict,
    RunRecord,
    StepRecord,
    ToolCallRecord,
    TrajectoryRecord,
    TurnCounts,
)
from flowproof.spec.load import LoadedSpec
from flowproof.trace.kinds import tool_lane

CONTAINMENT_NOT_ENGAGED = "not engaged"


def _trace_changes(flow: FlowOutcome) -> list[str]:
    if flow.trace_written is None or flow.previous_trace is None:
        return []
    from flowproof.engine.rerecord import rerecorded

    return rerecorded(flow.previous_trace, flow.lanes, flow.kept_turns).lines()


def flow_record(
    flow: FlowOutcome, loaded: LoadedSpec | None, duration: float | None = None
) -> FlowRecord:
    verdicts = {v.step.number: v for v in flow.verdicts if v.step is not None}
    steps = [
        _step_record(
            flow,
            step.ref.number,
            step.ref.line,
            step.kind,
            str(step.assertion),
            verdicts.get(step.ref.number),
            step.turn,
        )
        for step in (loaded.assertions if loaded else ())
    ]
    steps += [_flow_level(flow, v) for v in flow.verdicts if v.step is None]
    verdict: FlowVerdict = "pass" if flow.passed else "fail"
    turns = TurnCounts(served=flow.served, recorded=flow.recorded)
    control = None
    if loaded and loaded.spec.control:
        control = ControlRecord(
            id=loaded.spec.control,
            verdict=verdict,
            lanes=_control_lanes(loaded),
            containment=flow.egress.tier if flow.egress else CONTAINMENT_NOT_ENGAGED,
            evidence=ControlEvidence(
                spec=str(flow.spec_path),
                turns=turns,
                failed_steps=[s.expected for s in steps if s.passed is False],
                blocked=list(flow.egress.blocked) if flow.egress and flow.egress.contained else [],
            ),
        )
    trajectory = flow.trajectory
    return FlowRecord(
        spec=str(flow.spec_path),
        name=flow.name,
        verdict=verdict,
        reasons=list(flow.reasons),
        prompt="\n".join(loaded.prompts) if loaded else "",
        conversation=[turn.text for turn in loaded.conversation] if loaded else [],
        steps=steps,
        divergence=flow.divergence,
        turns=turns,
        timeline=lanes.timeline(flow.lanes),
        trajectory=None if trajectory is None else trajectory_record(trajectory),
        warnings=list(flow.warnings),
        notes=list(flow.notes),
        trace_changes=_trace_changes(flow),
        normalized=list(flow.normalized),
        ignored_fields=list(flow.ignored_fields),
        trace=str(flow.trace_written) if flow.trace_written else None,
        duration=None if duration is None else round(duration, 3),
        control=control,
        containment=flow.egress.tier if flow.egress else None,
        refused_from_outside=flow.outsiders,
    )


def trajectory_record(trajectory: Trajectory) -> TrajectoryRecord:
    """A trajectory as the run record writes it (and the Python API shows a trace's)."""
    return TrajectoryRecord(
        tool_calls=[
            ToolCallRecord(name=c.name, arguments=c.arguments) for c in trajectory.tool_calls
        ],
        executed=list(trajectory.executed),
        reply=trajectory.reply,
        reply_absent_reason=trajectory.reply_absent_reason,
    )


def _control_lanes(loaded: LoadedSpec) -> list[str]:
    """The step kinds' control lanes, and the MCP lane of every server a step judges at the
    tool boundary: a control proven by what was EXECUTED says so."""
    found = {step_kind(step.kind).control_lane for step in loaded.assertions}
    for step in loaded.assertions:
        assertion = step.assertion
        if isinstance(assertion, ToolCallAssertion) and at_tool_boundary(assertion.tool):
            lane = tool_lane(assertion.tool.split("/", 1)[0])
            if lane is not None:
                found.add(lane)
    return sorted(found)


def _step_record(
    flow: FlowOutcome,
    number: int,
    line: int,
    kind: str,
    expected: str,
    verdict: Verdict | None,
    turn: int | None = None,
) -> StepRecord:
    return StepRecord(
        turn=turn,
        step=number,
        file=str(flow.spec_path),
        line=line or None,
        kind=kind,
        passed=None if verdict is None else verdict.passed,
        expected=expected,
        observed=verdict.observed if verdict else "",
        message=verdict.message if verdict else "",
    )


def _flow_level(flow: FlowOutcome, verdict: Verdict) -> StepRecord:
    """A verdict that belongs to no step (`strict: true`)."""
    return StepRecord(
        step=None,
        file=str(flow.spec_path),
        line=verdict.at.line or None,
        kind=verdict.kind,
        passed=verdict.passed,
        expected=verdict.expected,
        observed=verdict.observed,
        message=verdict.message,
    )


def run_record(
    run_id: str,
    mode: str,
    started: datetime,
    exit_code: int,
    flows: Sequence[FlowRecord],
    errors: Sequence[ConfigProblem],
    internal_error: str | None = None,
) -> RunRecord:
    return RunRecord(
        flowproof_version=__version__,
        run_id=run_id,
        mode=mode,  # type: ignore[arg-type]  # a Mode value, checked by the model
        started_at=_iso(started),
        ended_at=_iso(datetime.now(UTC)),
        exit_code=exit_code,
        errors=[
            ErrorRecord(
                spec=str(error.spec) if error.spec else None, line=error.line, message=error.message
            )
            for error in errors
        ],
        flows=list(flows),
        internal_error=internal_error,
    )


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

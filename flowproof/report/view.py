"""The run record shaped for reading: failures first, JSON pretty-printed, counts computed.

Every report is rendered from this view, and the view is built from the run record alone
(runrecord/model.py), never from live objects, so a report rendered later from an old record
reads exactly like the one rendered at the end of the run. It reads fields; it never parses a
message back into its parts. The record's own types (a divergence, a tool call, an executed
call) are shown as they are; the templates show a value through the `block` filter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flowproof.core.errors import EXIT_FAILED, EXIT_PASSED
from flowproof.core.readjson import read_json
from flowproof.core.words import plural
from flowproof.matching.divergence import Difference, Divergence
from flowproof.report.flowfacts import (
    conversation_lines,
    declared_phrase,
    flow_warnings,
    tool_lanes,
)
from flowproof.runrecord.model import (
    ControlRecord,
    ExecutedCallRecord,
    FlowRecord,
    RunRecord,
    StepRecord,
    TimelineEntry,
    ToolCallRecord,
    ToolResultRecord,
)

_STATUS = {EXIT_PASSED: "passed", EXIT_FAILED: "failed"}
"""A run's status by its record's exit code; any other code (configuration, internal, a
signal) is an error."""
LONG_LINES = 12
"""A JSON block longer than this many lines (or LONG_CHARS characters) is collapsed in HTML."""
LONG_CHARS = 600


@dataclass(frozen=True, slots=True)
class Block:
    """A value shown as text: tool-call arguments, a tool result, a reply."""

    text: str
    """Pretty-printed when the value is JSON, else exactly as recorded."""
    compact: str
    """One line: compact JSON, or the text with its line breaks folded."""
    is_json: bool
    long: bool
    """Long enough to collapse behind a `<details>` in HTML."""


@dataclass(frozen=True, slots=True)
class TurnView:
    """One served (or recorded) model turn: what the model was shown, then what it answered."""

    number: int
    dialect: str
    known: bool
    """False when the record could not read the turn (a dialect this flowproof lacks)."""
    tool_results: list[ToolResultRecord]
    tool_calls: list[ToolCallRecord]
    """What the model asked for, its arguments the raw string it sent."""
    text: Block | None
    conversation_turn: int | None = None
    """The user turn it was sent in (a conversation flow); None otherwise."""


@dataclass(frozen=True, slots=True)
class McpEventView:
    """One entry of an MCP lane: a call and its answer, a notification, a server request."""

    entry: int
    kind: str
    """call | notification | server_request"""
    call: int | None
    """The call's number on its lane (what a divergence counts); None for the others."""
    method: str
    tool: str | None
    arguments: Block | None
    """A tool's arguments, or the message's params; None when it has none."""
    answer: Block | None
    """The result, or the error when `failed`; None for a notification."""
    failed: bool
    """Answered with a JSON-RPC error, or a tool result flagged `isError`."""
    mocked: bool
    after: int | None


@dataclass(frozen=True, slots=True)
class McpLaneView:
    """One MCP server's lane, in its own order (it shares no clock with the model turns)."""

    lane: str
    server: str
    events: list[McpEventView]
    calls: int
    mocked: int
    notifications: int
    phrase: str
    """`mcp.files: 4 calls (1 mocked by flowproof), 1 notification`."""
    diverged: bool
    """The flow's divergence is on this lane."""


@dataclass(frozen=True, slots=True)
class Marked:
    """A value as shown, split around the span where it differs from the other side's: a long
    prompt's one changed word is found at a glance."""

    before: str
    changed: str
    after: str


@dataclass(frozen=True, slots=True)
class FieldView:
    """One differing field of a divergence: where, and both sides marked."""

    location: str
    line: str
    """`location: recorded X, replayed Y`, as the terminal prints it."""
    recorded: Marked
    replayed: Marked


def mark_change(recorded: str, replayed: str) -> tuple[Marked, Marked]:
    """Both texts split into the prefix and suffix they share and the span between, which is
    what differs (empty on the side that only lacks something)."""
    limit = min(len(recorded), len(replayed))
    start = next((i for i in range(limit) if recorded[i] != replayed[i]), limit)
    end = 0  # how many characters, counted from the end, both share after `start`
    while end < limit - start and recorded[-1 - end] == replayed[-1 - end]:
        end += 1
    # Whole words are marked (`an aisle` → `a window`, not `n aisle` → ` window`): a reader
    # looks for words. The shared prefix and suffix are the same on both sides, so one
    # side's characters decide.
    while start > 0 and recorded[start - 1].isalnum():
        start -= 1
    while end > 0 and recorded[len(recorded) - end].isalnum():
        end -= 1

    def split(text: str) -> Marked:
        return Marked(text[:start], text[start : len(text) - end], text[len(text) - end :])

    return split(recorded), split(replayed)


@dataclass(frozen=True, slots=True)
class StepView:
    number: int | None
    line: int | None
    step: str
    verdict: str
    """pass | fail | not evaluated"""
    message: str
    detail: str
    """The message without its `step N (file:line): <step> — ` prefix (the table shows those)."""
    turn: int | None = None
    """The conversation turn the step judged; None for a flow-wide step."""


@dataclass(frozen=True, slots=True)
class UserTurnView:
    """One user turn of a conversation flow: what the user said, and how the turn went."""

    number: int
    text: str
    summary: str
    """`turn 2 · 2 requests · 3 of 3 steps passed · "Yes, book it"` (as the terminal says)."""


@dataclass(frozen=True, slots=True)
class ControlView:
    id: str
    verdict: str
    lanes: list[str]
    containment: str
    failed_steps: list[str]


@dataclass(frozen=True, slots=True)
class FlowView:
    """One flow of the run as the templates read it: its record, and what the reports show of
    it beyond its fields. A fact the record holds as it is shown is read from the record (the
    properties below), never copied."""

    record: FlowRecord
    index: int
    """1-based position in the run (the record's order)."""
    anchor: str
    other_reasons: list[str]
    """The reasons the divergence block does not already show."""
    failure_type: str
    """divergence | assertion | run ('' when passed): why, in one word, for JUnit."""
    conversation: list[UserTurnView]
    """The user turns of a conversation flow; empty for a single-turn flow. The steps and the
    timeline are grouped by them (each step and model turn carries its `turn`)."""
    steps: list[StepView]
    divergence_fields: list[FieldView]
    """The divergence's differing fields, each side marked where it differs."""
    turns_phrase: str
    timeline: list[TurnView]
    """The model turns only; MCP lanes are in `mcp_lanes`."""
    mcp_lanes: list[McpLaneView]
    """Each tool lane, as its lane kind draws it (`LaneKind.lane_view`)."""
    declared_phrase: str
    """What the flow declared about its request bodies: `normalised: cwd, date · matched
    ignoring: metadata.user_id` ('' when nothing)."""
    reply: Block | None
    reply_turn: int | None
    """The timeline turn whose text is the reply, so the timeline shows it once."""
    warnings: list[str]
    """The record's warnings, and the requests refused from outside the agent."""
    control: ControlView | None

    @property
    def spec(self) -> str:
        return self.record.spec

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def verdict(self) -> str:
        return self.record.verdict

    @property
    def passed(self) -> bool:
        return self.record.verdict == "pass"

    @property
    def reasons(self) -> list[str]:
        return self.record.reasons

    @property
    def first_reason(self) -> str:
        return self.record.reasons[0] if self.record.reasons else ""

    @property
    def prompt(self) -> str:
        return self.record.prompt

    @property
    def divergence(self) -> Divergence | None:
        return self.record.divergence

    @property
    def served(self) -> int:
        return self.record.turns.served

    @property
    def recorded(self) -> int:
        return self.record.turns.recorded

    @property
    def mcp_calls(self) -> int:
        """Calls on every MCP lane together."""
        return sum(int(lane.calls) for lane in self.mcp_lanes)

    @property
    def mcp_phrase(self) -> str:
        """Each MCP lane's counts, `; `-joined ('' when the flow has none)."""
        return "; ".join(lane.phrase for lane in self.mcp_lanes)

    @property
    def normalized(self) -> list[str]:
        """The `normalize:` entries (the markdown shows each as code)."""
        return self.record.normalized

    @property
    def ignored_fields(self) -> list[str]:
        """The `ignore_fields:` paths."""
        return self.record.ignored_fields

    @property
    def has_trajectory(self) -> bool:
        return self.record.trajectory is not None

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        """What the model ASKED for."""
        trajectory = self.record.trajectory
        return trajectory.tool_calls if trajectory else []

    @property
    def executed(self) -> list[ExecutedCallRecord]:
        """What the agent EXECUTED at the MCP tool boundary."""
        trajectory = self.record.trajectory
        return trajectory.executed if trajectory else []

    @property
    def reply_absent_reason(self) -> str:
        trajectory = self.record.trajectory
        return trajectory.reply_absent_reason if trajectory else ""

    @property
    def trace(self) -> str:
        return self.record.trace or ""

    @property
    def trace_changes(self) -> list[str]:
        """At a re-record: what changed against the trace it replaced (`record --diff`'s lines)."""
        return self.record.trace_changes

    @property
    def duration(self) -> float | None:
        """Seconds, when the record carries a per-flow `duration`."""
        return self.record.duration


@dataclass(frozen=True, slots=True)
class ErrorView:
    """A spec that could not be run at all (a configuration error, exit code 2)."""

    spec: str
    """The spec path the message starts with, or '' when it names none."""
    message: str


@dataclass(frozen=True, slots=True)
class RunView:
    """The run as the templates read it: its record, its flows' views (failed first) and what
    the reports show beyond the record's fields, which are read from it (the properties)."""

    record: RunRecord
    errors: list[ErrorView]
    flows: list[FlowView]
    """Failed flows first, each group in run order."""

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def mode(self) -> str:
        return self.record.mode

    @property
    def flowproof_version(self) -> str:
        return self.record.flowproof_version

    @property
    def format_version(self) -> int:
        return self.record.format_version

    @property
    def started_at(self) -> str:
        return self.record.started_at

    @property
    def ended_at(self) -> str:
        return self.record.ended_at

    @property
    def timestamp(self) -> str:
        """`started_at` without its zone designator (JUnit's timestamp; the times are UTC)."""
        return self.record.started_at.removesuffix("Z")

    @property
    def duration(self) -> float | None:
        return _seconds_between(self.record.started_at, self.record.ended_at)

    @property
    def exit_code(self) -> int:
        return self.record.exit_code

    @property
    def status(self) -> str:
        """passed | failed | error"""
        return _STATUS.get(self.record.exit_code, "error")

    @property
    def failed(self) -> int:
        return sum(not flow.passed for flow in self.flows)

    @property
    def passed(self) -> int:
        return len(self.flows) - self.failed

    @property
    def record_path(self) -> str:
        return f".flowproof/runs/{self.record.run_id}/report.json"


def build_view(record: RunRecord) -> RunView:
    """The view of one run record (already validated by its model)."""
    flows = [_flow(index, flow, record.mode) for index, flow in enumerate(record.flows, 1)]
    flows.sort(key=lambda flow: flow.passed)  # stable: run order kept within each group
    errors = [ErrorView(error.spec or "", error.message) for error in record.errors]
    return RunView(record, errors, flows)


def flow_view(flow: FlowRecord, mode: str) -> FlowView:
    """One flow's view on its own, as soon as the flow ends (the terminal summary's counts)."""
    return _flow(1, flow, mode)


def _flow(index: int, flow: FlowRecord, mode: str) -> FlowView:
    divergence = flow.divergence
    steps = [_step(step) for step in flow.steps]
    trajectory = flow.trajectory
    reply = block(trajectory.reply) if trajectory and trajectory.reply is not None else None
    timeline = [_turn(row) for row in flow.timeline if isinstance(row, TimelineEntry)]
    return FlowView(
        record=flow,
        index=index,
        anchor=f"flow-{index}",
        other_reasons=[r for r in flow.reasons if divergence is None or r != divergence.text],
        failure_type=_failure_type(flow.verdict == "pass", divergence, steps),
        conversation=[
            UserTurnView(number, text, summary)
            for (number, text), summary in zip(
                enumerate(flow.conversation, 1), conversation_lines(flow), strict=True
            )
        ],
        steps=_grouped(steps),
        divergence_fields=[_field(d) for d in divergence.fields] if divergence else [],
        turns_phrase=_turns_phrase(mode, flow),
        timeline=timeline,
        mcp_lanes=tool_lanes(flow),
        declared_phrase=declared_phrase(flow),
        reply=reply,
        reply_turn=next((t.number for t in reversed(timeline) if reply and t.text == reply), None),
        warnings=flow_warnings(flow),
        control=_control(flow.control) if flow.control else None,
    )


def _step(step: StepRecord) -> StepView:
    return StepView(
        number=step.step,
        line=step.line,
        step=step.expected,
        verdict=step.verdict,
        message=step.message,
        detail=step.observed or step.message,
        turn=step.turn,
    )


def _grouped(steps: list[StepView]) -> list[StepView]:
    """Each conversation turn's steps together, turn 1 first, then the flow-wide steps (the
    strict verdict last, as always); a single-turn flow's in their order."""
    in_turns = sorted((s for s in steps if s.turn is not None), key=lambda s: s.turn or 0)
    return [*in_turns, *(s for s in steps if s.turn is None)]


def _turns_phrase(mode: str, flow: FlowRecord) -> str:
    served, recorded = flow.turns.served, flow.turns.recorded
    if mode == "record":
        unwritten = "" if flow.trace else "; no trace written"
        return f"{plural(served, 'turn')} recorded{unwritten}"
    return f"served {served} of {plural(recorded, 'recorded turn')}"


def _failure_type(passed: bool, divergence: Divergence | None, steps: list[StepView]) -> str:
    if passed:
        return ""
    if divergence is not None:
        return "divergence"
    if any(step.verdict == "fail" for step in steps):
        return "assertion"
    return "run"


def _field(data: Difference) -> FieldView:
    recorded, replayed = mark_change(data.recorded, data.replayed)
    return FieldView(data.location, data.line, recorded, replayed)


def _turn(turn: TimelineEntry) -> TurnView:
    return TurnView(
        number=turn.turn,
        dialect=turn.dialect,
        known=turn.known,
        tool_results=list(turn.tool_results),
        tool_calls=list(turn.tool_calls),
        text=block(turn.text) if turn.text is not None else None,
        conversation_turn=turn.conversation_turn,
    )


def _control(data: ControlRecord) -> ControlView:
    return ControlView(
        id=data.id,
        verdict=data.verdict,
        lanes=list(data.lanes),
        containment=data.containment,
        failed_steps=list(data.evidence.failed_steps),
    )


def block(value: Any) -> Block:
    """Arguments arrive as the raw string the model sent (timeline) or parsed (trajectory);
    either way, JSON is shown pretty-printed and anything else exactly as it is."""
    parsed, is_json = value, not isinstance(value, str)
    if isinstance(value, str):
        try:
            parsed = read_json(value)
            is_json = isinstance(parsed, dict | list)
        except ValueError:
            is_json = False
    if is_json:
        text = json.dumps(parsed, indent=2, ensure_ascii=False)
        compact = json.dumps(parsed, ensure_ascii=False)
    else:
        text = str(value)
        compact = " ".join(text.split())
    return Block(
        text=text,
        compact=compact,
        is_json=is_json,
        long=text.count("\n") + 1 > LONG_LINES or len(text) > LONG_CHARS,
    )


def _seconds_between(start: str, end: str) -> float | None:
    try:
        began = datetime.fromisoformat(start.replace("Z", "+00:00"))
        ended = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (ended - began).total_seconds())

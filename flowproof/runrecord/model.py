"""The run record's shape, as one typed model that writes, reads and documents it.

Every run and record writes one (`<runs dir>/<run id>/report.json`); the HTML, markdown and JUnit
reports and `flowproof audit` are rendered FROM it, never from live objects, so what a reviewer
reads is exactly what was recorded. Each field says what it means in the docstring under it;
`docs/schemas/run-record.schema.json` is generated from these models (`python -m
flowproof.runrecord.schema`), and a test keeps the committed file current.

A value a lower layer already types (a divergence: matching/divergence.py; an executed call:
assertions/trajectory.py) is held as that type, not copied into one of the record's own: its
`...Layout` model here checks and documents how it is stored, and reading a record gives the
value back.

It never holds a secret value: declared secrets and the record key are redacted from the whole
document before it is written, and prompts are stored as the spec wrote them (`${VAR}` unresolved).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import Discriminator, GetCoreSchemaHandler, GetPydanticSchema, Tag
from pydantic_core import CoreSchema, core_schema

from flowproof.assertions.trajectory import ExecutedCall
from flowproof.core.lanes import MODEL_LANE
from flowproof.matching.divergence import Difference, Divergence
from flowproof.runrecord.base import LaneRow
from flowproof.runrecord.base import RecordModel as _Model
from flowproof.trace.kinds import row_types

FORMAT_VERSION: Literal[4] = 4
"""Bump when the layout changes, and add a migration in runrecord/migrate.py."""

FlowVerdict = Literal["pass", "fail"]


class ToolCallRecord(_Model):
    """A tool call the model asked for."""

    name: str
    """The tool's name as the model wrote it."""
    arguments: Any
    """In a timeline: the raw argument string as it crossed the wire. In a trajectory: the
    parsed JSON value, or that raw string when it is not JSON."""


class ToolResultRecord(_Model):
    """A tool result the agent reported back to the model (after substitution)."""

    tool: str
    content: str


class TimelineEntry(_Model):
    """One model turn served or recorded, in arrival order."""

    lane: str = "model"
    """The lane it crossed: `model` (an MCP server's entries are McpTimelineEntry rows)."""
    turn: int
    """1-based arrival number within the lane."""
    dialect: str
    """The wire API of a model turn."""
    known: bool
    """False when this flowproof cannot read the turn (a dialect it lacks)."""
    tool_results: list[ToolResultRecord] = []
    """What the model was shown the tools returned, just before this turn."""
    tool_calls: list[ToolCallRecord] = []
    """What the model asked for in this turn."""
    text: str | None = None
    """The model's text in this turn; None when it answered with tool calls only."""
    conversation_turn: int | None = None
    """The user turn of the flow's `conversation:` during which the agent sent it; None in a
    single-turn flow."""


_ROW_TYPES = row_types()
"""(kind, row type) of every lane kind with run-record rows of its own."""


def _timeline_kind(row: Any) -> str:
    """The tag of a row's type: its lane's kind when that kind has rows of its own;
    otherwise the model turn's."""
    lane = row.get("lane", MODEL_LANE) if isinstance(row, dict) else getattr(row, "lane", None)
    kind, dot, _ = str(lane or MODEL_LANE).partition(".")
    return kind if dot and kind in dict(_ROW_TYPES) else MODEL_LANE


def _timeline_row() -> Any:
    """The union of every row type a timeline may hold, told apart by the lane's kind."""
    members = [Annotated[TimelineEntry, Tag(MODEL_LANE)]]
    members += [Annotated[row, Tag(kind)] for kind, row in _ROW_TYPES]
    if len(members) == 1:
        return TimelineEntry
    return Annotated[Union[tuple(members)], Discriminator(_timeline_kind)]  # noqa: UP007


if TYPE_CHECKING:
    TimelineRow = TimelineEntry | LaneRow
else:
    TimelineRow = _timeline_row()
"""A timeline row: a model turn, or an entry of a lane whose kind has rows of its own (an MCP
lane's: mcp/rows.py).

The members are gathered from the lane kinds' registrations (trace/kinds.py) when this module
is defined: pydantic builds the validator and the published JSON Schema then, and the schema
must describe every row a record may hold. A row type is named by its registration, not by its
kind's class, so building the run record's model never loads a kind's behaviour."""


class DifferenceLayout(_Model):
    """One field at which a request differs from the recorded one."""

    path: str
    """Where (`messages[3].tool_calls[0].function.arguments: city`)."""
    recorded: str
    """The recorded value, as the message shows it (`(absent)` when the field is new)."""
    replayed: str
    """The replayed value, as the message shows it (`(absent)` when the field is gone)."""
    note: str = ""
    """A qualifier of the difference (`same keys in a different order`, ...)."""


class DivergenceLayout(_Model):
    """The first request no recorded entry served."""

    lane: str
    """The lane the request arrived on: `model`, or `mcp.<server>` for an MCP call."""
    index: int
    """1-based arrival number of the request that diverged (a model request, or a call on the
    MCP lane)."""
    recorded_index: int | None
    """1-based number of the recorded entry it was compared with (a turn, or a call on the
    MCP lane); None when none was left."""
    envelope: list[str]
    """Envelope differences (model, tools, message roles), one line each."""
    path: str | None
    """The first path at which the bodies differ; None when there is no such path."""
    recorded: str | None
    """The recorded value at `path`, as the message shows it."""
    replayed: str | None
    """The replayed value at `path`, as the message shows it."""
    note: str = ""
    """A qualifier of the difference (`same keys in a different order`, ...)."""
    reason: str = ""
    """Why there is no path to show (an extra call; equal bodies)."""
    differences: list[DifferenceLayout] = []
    """Every differing field shown, `path` first (at most ten)."""
    more_differences: int = 0
    """How many more fields differ beyond `differences`."""
    remedy: str = ""
    """What to declare so that the request matches, when the difference's shape says it (a
    date, a per-run id); empty otherwise."""
    conversation_turn: int | None = None
    """In a `conversation:` flow, the user turn the request was sent in."""
    turn_request: int | None = None
    """In a `conversation:` flow, the request's 1-based place among its user turn's."""
    shape: tuple[int, int] | None = None
    """(recorded, replayed) model requests of the user turn, when the replay sent more
    requests in it than its recording holds: the conversation's shape changed."""
    headline: str
    """Its first line: which request, compared with which recorded entry (worded from the
    fields above; not read back)."""
    text: str
    """The whole divergence message, as flowproof printed it (worded from the fields above;
    not read back)."""


def _divergence_laid_out(divergence: Divergence) -> dict[str, Any]:
    """A divergence as the record lays it out."""
    return {
        "lane": divergence.lane,
        "index": divergence.index,
        "recorded_index": divergence.recorded_index,
        "envelope": list(divergence.envelope),
        "path": divergence.path,
        "recorded": divergence.recorded,
        "replayed": divergence.replayed,
        "note": divergence.note,
        "reason": divergence.reason,
        "differences": [_difference_laid_out(d) for d in divergence.fields],
        "more_differences": divergence.unshown,
        "remedy": divergence.remedy,
        "conversation_turn": divergence.conversation_turn,
        "turn_request": divergence.turn_request,
        "shape": list(divergence.shape) if divergence.shape is not None else None,
        "headline": divergence.headline,
        "text": divergence.render(),
    }


def _difference_laid_out(difference: Difference) -> dict[str, str]:
    return {
        "path": difference.path,
        "recorded": difference.recorded,
        "replayed": difference.replayed,
        "note": difference.note,
    }


def _divergence_read(layout: DivergenceLayout) -> Divergence:
    """The divergence a record's layout holds; its headline and text are worded again from
    the fields, never read back."""
    fields = [Difference(d.path, d.recorded, d.replayed, d.note) for d in layout.differences]
    if not fields and layout.path is not None:  # written before every field was kept
        fields = [
            Difference(layout.path, layout.recorded or "", layout.replayed or "", layout.note)
        ]
    return Divergence(
        lane=layout.lane,
        index=layout.index,
        recorded_index=layout.recorded_index,
        envelope=tuple(layout.envelope),
        difference=fields[0] if fields else None,
        reason=layout.reason,
        remedy=layout.remedy,
        others=tuple(fields[1:]),
        unshown=layout.more_differences,
        conversation_turn=layout.conversation_turn,
        turn_request=layout.turn_request,
        shape=layout.shape,
    )


def _stored_as(
    layout: type[_Model], kind: type, laid_out: Callable[[Any], Any], read: Callable[[Any], Any]
) -> GetPydanticSchema:
    """A value of `kind` (a frozen dataclass of a lower layer), checked and described in the
    record by its `layout`, stored as `laid_out` lays it out and read back by `read`: the
    record holds the type itself, not a copy of it."""

    def as_layout(value: Any) -> Any:
        return laid_out(value) if isinstance(value, kind) else value

    def schema(_source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_before_validator_function(
            as_layout,
            core_schema.no_info_after_validator_function(read, handler.generate_schema(layout)),
            serialization=core_schema.plain_serializer_function_ser_schema(as_layout),
        )

    return GetPydanticSchema(schema)


DivergenceRecord = Annotated[
    Divergence,
    _stored_as(DivergenceLayout, Divergence, _divergence_laid_out, _divergence_read),
]
"""The first request no recorded entry served: matching/divergence.py's `Divergence`, the one
divergence type, laid out in the record as `DivergenceLayout` describes."""

DifferenceRecord = Difference
"""One field at which a request differs from the recorded one (matching/divergence.py)."""


class StepRecord(_Model):
    """The verdict of one assertion step (or of the flow-level `strict: true` check)."""

    step: int | None
    """1-based position of the step in `steps:`; None for the strict check."""
    file: str
    """The spec file, as given on the command line."""
    line: int | None
    """The line of the step (of `strict:` for the strict check)."""
    kind: str
    """The step key (`assert_tool_call`, ...), or `strict`."""
    passed: bool | None
    """Whether it held; None when it was not evaluated (the flow failed at the boundary)."""
    expected: str
    """The assertion as the spec line reads."""
    observed: str
    """What the trajectory held instead; empty when it passed or was not evaluated."""
    message: str
    """The whole failure sentence as printed; empty unless it failed."""
    turn: int | None = None
    """The conversation turn whose trajectory the step judged; None for a step that judged the
    whole flow."""

    @property
    def verdict(self) -> str:
        """pass | fail | not evaluated."""
        return "not evaluated" if self.passed is None else ("pass" if self.passed else "fail")

    @property
    def name(self) -> str:
        """`expected`, by the Python API's name: the assertion as the spec line reads."""
        return self.expected

    @property
    def number(self) -> int | None:
        """`step`, by the Python API's name: the 1-based position in `steps:`."""
        return self.step


class TurnCounts(_Model):
    served: int
    """Model turns served (replay) or recorded (record)."""
    recorded: int
    """Model turns in the trace (replay only; 0 at record)."""


class ExecutedCallLayout(_Model):
    """A tool call the agent EXECUTED at the MCP tool boundary (a `tools/call` on a lane)."""

    name: str
    """`<server>/<tool>`, as `assert_tool_call` steps name it (worded from `server` and
    `tool`; not read back)."""
    server: str
    tool: str
    arguments: Any
    """The call's arguments, parsed JSON."""
    call: int
    """Its 1-based number among the calls of lane `mcp.<server>` (the timeline row's `call`)."""
    mocked: bool
    """Answered by flowproof from the spec; the real server never ran it."""


def _executed_laid_out(call: ExecutedCall) -> dict[str, Any]:
    return {
        "name": call.name,
        "server": call.server,
        "tool": call.tool,
        "arguments": call.arguments,
        "call": call.call,
        "mocked": call.mocked,
    }


def _executed_read(layout: ExecutedCallLayout) -> ExecutedCall:
    return ExecutedCall(layout.server, layout.tool, layout.arguments, layout.call, layout.mocked)


ExecutedCallRecord = Annotated[
    ExecutedCall, _stored_as(ExecutedCallLayout, ExecutedCall, _executed_laid_out, _executed_read)
]
"""A tool call the agent executed at the MCP tool boundary: assertions/trajectory.py's
`ExecutedCall`, the one type of it, laid out in the record as `ExecutedCallLayout` describes."""


class TrajectoryRecord(_Model):
    """What the flow did, as the assertions saw it."""

    tool_calls: list[ToolCallRecord]
    """What the model ASKED for (the model boundary), in turn order."""
    executed: list[ExecutedCallRecord] = []
    """What the agent EXECUTED at the MCP tool boundary, lane by lane in each lane's order."""
    reply: str | None
    """The final reply of the main conversation; None when there was none."""
    reply_absent_reason: str
    """Why there is no reply, in words."""


class ControlEvidence(_Model):
    spec: str
    turns: TurnCounts
    failed_steps: list[str]
    """The assertions of the failed steps, as the spec lines read."""
    blocked: list[str] = []
    """The undeclared destinations egress containment refused (`connect 203.0.113.7:443`);
    listed only when THIS run was contained, empty otherwise."""


class ControlRecord(_Model):
    """The control a flow evidences (`control: <id>`), for `flowproof audit`."""

    id: str
    verdict: FlowVerdict
    lanes: list[str]
    """What the flow ASSERTED: the control lanes of its step kinds, plus `mcp.<server>` for
    each MCP server whose calls a step judges at the tool boundary (`<server>/<tool>`)."""
    containment: str
    """What ENFORCED it: the containment tier of this run."""
    evidence: ControlEvidence


class FlowRecord(_Model):
    """One flow of the run."""

    spec: str
    """The spec file, as given."""
    name: str
    verdict: FlowVerdict
    reasons: list[str]
    """Why the flow failed, most fundamental first; empty when it passed."""
    prompt: str
    """The prompt steps joined, as the spec wrote them (a conversation's first user turn)."""
    conversation: list[str] = []
    """The user turns of the flow's `conversation:`, as the spec wrote them, turn 1 first;
    empty for a single-turn flow."""
    steps: list[StepRecord]
    divergence: DivergenceRecord | None
    turns: TurnCounts
    timeline: list[TimelineRow]
    """The model turns, then each MCP lane's entries (lanes share no clock)."""
    trajectory: TrajectoryRecord | None
    """None when the flow never ran (no trace, a busy port, before_each failed)."""
    warnings: list[str]
    notes: list[str] = []
    """What happened at a boundary that did not fail the flow but is worth knowing: at record,
    the attempts the upstream answered "try again later" (429, 503, 529) before the agent's
    retry was answered, with how long it asked to wait."""
    normalized: list[str] = []
    """The environment facts normalised in this flow's request bodies (`normalize:`, the
    suite's entries then the flow's: `cwd`, `date`, `${PROJECT}`); empty when none."""
    ignored_fields: list[str] = []
    """The request-body paths matching left out (`ignore_fields:`, the suite's then the
    flow's: `metadata.user_id`, `input[*].id`); empty when none."""
    trace: str | None
    """The trace this record wrote (record only, and only when the flow passed)."""
    trace_changes: list[str] = []
    """At a record that replaced a trace: what changed against it, as `record --diff` prints
    it (the turns kept and re-recorded, then every trajectory and request change); empty at
    a first record, at replay, and when nothing changed."""
    duration: float | None = None
    """Seconds the flow took."""
    control: ControlRecord | None = None
    containment: str | None = None
    """The egress containment tier of this flow's agent run (`contained (linux seccomp)`,
    `not contained (<reason>)`); None when the flow engages no egress containment."""
    refused_from_outside: int = 0
    """Requests the model proxy and the MCP stand-ins refused because they did not carry the
    flow's capability, the secret every URL given to the agent holds: sent by another process
    on the machine (or by a client that dropped the path of its base URL). None was forwarded,
    served or recorded; a `url:` flow's service, started without it, is not held to it."""
    interrupted: Literal["SIGINT", "SIGTERM", "SIGHUP"] | None = None
    """The signal that stopped flowproof while this flow ran (its agent's tree was stopped,
    no trace was written, and the run's exit code is 128 + the signal's number); None when
    the flow ran to its end."""


class ErrorRecord(_Model):
    """A spec that could not be run at all (a configuration error, exit code 2)."""

    spec: str | None
    """The file at fault, when the error names one."""
    line: int | None
    message: str
    """The whole error as printed."""


class RunRecord(_Model):
    """One `flowproof run` or `flowproof record`."""

    format_version: Literal[4] = FORMAT_VERSION
    mode: Literal["record", "replay"]
    flowproof_version: str
    run_id: str
    """Sortable by time, unique within the second: the record's directory name."""
    started_at: str
    """UTC, ISO 8601 (`2026-12-01T08:00:00Z`)."""
    ended_at: str
    exit_code: int
    """0 passed, 1 a flow failed, 2 a configuration error, 3 an internal error; 130, 143 or
    129 when SIGINT, SIGTERM or SIGHUP interrupted the run."""
    errors: list[ErrorRecord]
    flows: list[FlowRecord]
    internal_error: str | None = None
    """Set when flowproof itself crashed: the one-line message; the traceback is saved in
    `traceback.txt` beside this file."""

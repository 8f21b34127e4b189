"""The terminal summary of a run, rendered from the run record like every other report.

Each flow's lines come from its flow record as it stands when the flow ends, and the closing
`flows: …` line from the run record, so what the terminal says and what the HTML, markdown and
JUnit reports say are read from the same fields. Two facts are handed in because the record
holds them elsewhere or not at all: the mode (the run record's, known before any flow ends) and
the filesystem-observation report, which is shown on stderr only and never recorded.

The lines are returned, not printed: the CLI prints them through its redacting `out()`, which
also keeps any line (a reason quoting model text, say) from starting a GitHub workflow command.
"""

from __future__ import annotations

import json
import signal
from typing import Literal

from flowproof.core.words import plural
from flowproof.guards.workflow_commands import quoted
from flowproof.runrecord.model import FlowRecord, RunRecord, TimelineEntry

RunMode = Literal["record", "replay"]

INDENT = "      "
"""Under a flow's headline: its reasons, warnings and containment."""


def indent(text: str, prefix: str = INDENT) -> str:
    """Every line of `text` set under a headline."""
    return "\n".join(prefix + line for line in text.splitlines())


def flow_lines(flow: FlowRecord, mode: RunMode, fs_report: str = "") -> list[str]:
    """A flow's headline (verdict, name, spec, counts), then what it was contained by, why it
    failed, what it warns of, and what the filesystem observation saw."""
    if flow.interrupted is not None:
        return _interrupted_lines(flow)
    lines = [f"{_verdict(flow)}  {_named(flow)} · {_counts(flow, mode)}"]
    lines += [indent(line) for line in conversation_lines(flow)]
    if flow.containment is not None:  # a flow that declares no egress rule is not told so each
        lines.append(indent(f"containment: {flow.containment}"))  # run; its record says so
    lines += [indent(reason) for reason in flow.reasons]
    lines += [indent(f"warning: {warning}") for warning in flow_warnings(flow)]
    lines += [indent(f"note: {note}") for note in flow.notes]
    if fs_report:
        lines.append(indent(fs_report))
    return lines


def conversation_lines(flow: FlowRecord) -> list[str]:
    """A conversation flow's turns, one line each: its model requests, its steps' verdicts
    and what the user said (the failing steps are among the flow's reasons, each naming its
    turn); nothing for a single-turn flow."""
    lines = []
    for number, text in enumerate(flow.conversation, 1):
        requests = sum(
            1
            for row in flow.timeline
            if isinstance(row, TimelineEntry) and row.conversation_turn == number
        )
        steps = [step for step in flow.steps if step.turn == number]
        judged = [step for step in steps if step.passed is not None]
        verdicts = (
            f"{sum(bool(step.passed) for step in judged)} of {plural(len(steps), 'step')} passed"
            if judged
            else f"{plural(len(steps), 'step')} not evaluated"
            if steps
            else "no steps"
        )
        said = json.dumps(_first_line(text), ensure_ascii=False)  # quoted: one line, always
        lines.append(f"turn {number} · {plural(requests, 'request')} · {verdicts} · {said}")
    return lines


def _first_line(text: str, width: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def error_lines(spec: str, message: str) -> list[str]:
    """A spec that could not be run at all: the file as given, then the whole error."""
    return [f"ERROR {quoted(spec)}", indent(message)]


def summary_line(run: RunRecord) -> str:
    """`flows: N passed, M failed`, then the specs that never ran and the interrupting signal.
    A flow a signal cut short is neither passed nor failed: the signal is named instead."""
    passed = sum(flow.verdict == "pass" for flow in run.flows)
    failed = sum(flow.verdict == "fail" and flow.interrupted is None for flow in run.flows)
    tail = f", {len(run.errors)} not run (configuration errors)" if run.errors else ""
    interrupted_by = _interrupting_signal(run.exit_code)
    if interrupted_by is not None:
        tail += f"; interrupted by {interrupted_by}"
    return f"\nflows: {passed} passed, {failed} failed{tail}"


def _verdict(flow: FlowRecord) -> str:
    return "PASS" if flow.verdict == "pass" else "FAIL"


def flow_warnings(flow: FlowRecord) -> list[str]:
    """The flow's warnings, then the requests refused from outside the agent when there were
    any: what every report and the terminal list under a flow."""
    refused = flow.refused_from_outside
    outside = (
        f"refused requests from outside the agent: {refused} (sent to flowproof's proxy or an "
        "MCP stand-in without the flow's capability; none was forwarded, served or recorded)"
    )
    return [*flow.warnings, *([outside] if refused else [])]


def _counts(flow: FlowRecord, mode: RunMode) -> str:
    """Turns recorded (and where the trace went) or served, and the MCP calls when any."""
    calls = _mcp_calls(flow, mode)
    tool_calls = f" · {plural(calls, 'MCP call')}" if calls else ""
    turns = flow.turns
    if mode != "record":
        return f"{turns.served} of {turns.recorded} turns served{tool_calls}"
    counts = f"{plural(turns.served, 'turn')} recorded{tool_calls}"
    if flow.trace:
        return f"{counts} → {flow.trace}"
    return counts if flow.verdict == "pass" else f"{counts}; no trace written"


def _mcp_calls(flow: FlowRecord, mode: RunMode) -> int:
    """The MCP calls, counted as every report counts them (its flow view). A timeline of model
    turns alone has none, and is told so without building the view (report/view.py, loaded
    by the first flow that has a row of another lane)."""
    if all(isinstance(row, TimelineEntry) for row in flow.timeline):
        return 0
    from flowproof.report.view import flow_view

    return flow_view(flow, mode).mcp_calls


def _interrupted_lines(flow: FlowRecord) -> list[str]:
    """A flow a signal stopped: its one reason says what flowproof did about it."""
    return [f"INTERRUPTED  {_named(flow)}", *map(indent, flow.reasons)]


def _named(flow: FlowRecord) -> str:
    """The flow's name and spec file, each JSON-quoted when it is not one plain line, so a name
    holding a line break cannot make the headline two lines (or the second a workflow
    command)."""
    return f"{quoted(flow.name)}  ({quoted(flow.spec)})"


def _interrupting_signal(exit_code: int) -> str | None:
    """The signal an exit code of 128 + its number stands for (the shell's convention, which the
    run record's `exit_code` follows); None for an exit code a signal did not cause."""
    if exit_code <= 128:
        return None
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return None

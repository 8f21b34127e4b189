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

import signal
from typing import Literal

from flowproof.core.words import plural
from flowproof.guards.workflow_commands import quoted
from flowproof.report.flowfacts import conversation_lines, flow_counts, flow_warnings, mcp_calls
from flowproof.runrecord.model import FlowRecord, RunRecord

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


def error_lines(spec: str, message: str) -> list[str]:
    """A spec that could not be run at all: the file as given, then the whole error."""
    return [f"ERROR {quoted(spec)}", indent(message)]


def summary_line(run: RunRecord) -> str:
    """`flows: N passed, M failed`, then the specs that never ran and the interrupting signal.
    A flow a signal cut short is neither passed nor failed: the signal is named instead."""
    counts = flow_counts(run)
    tail = f", {counts.not_run} not run (configuration errors)" if counts.not_run else ""
    interrupted_by = _interrupting_signal(run.exit_code)
    if interrupted_by is not None:
        tail += f"; interrupted by {interrupted_by}"
    return f"\nflows: {counts.passed} passed, {counts.failed} failed{tail}"


def _verdict(flow: FlowRecord) -> str:
    return "PASS" if flow.verdict == "pass" else "FAIL"


def _counts(flow: FlowRecord, mode: RunMode) -> str:
    """Turns recorded (and where the trace went) or served, and the MCP calls when any."""
    calls = mcp_calls(flow)
    tool_calls = f" · {plural(calls, 'MCP call')}" if calls else ""
    turns = flow.turns
    if mode != "record":
        return f"{turns.served} of {turns.recorded} turns served{tool_calls}"
    counts = f"{plural(turns.served, 'turn')} recorded{tool_calls}"
    if flow.trace:
        return f"{counts} → {flow.trace}"
    return counts if flow.verdict == "pass" else f"{counts}; no trace written"


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

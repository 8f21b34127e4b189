"""What every report reads off a run record the same way: the run's flows counted by outcome,
the user turns of a conversation, the warnings listed under a flow, what the flow declared
about its request bodies, and its tool lanes as their kinds draw them.

Below both the terminal summary (terminal.py) and the view the templates read (view.py), so
each says these things in the same words without importing the other.
"""

from __future__ import annotations

import json
from typing import Any

from flowproof.core.words import plural
from flowproof.runrecord.base import RecordModel
from flowproof.runrecord.model import FlowRecord, RunRecord, TimelineEntry
from flowproof.trace.kinds import kind_named


class FlowCounts(RecordModel):
    """The run's flows by outcome, as its summary line counts them."""

    passed: int
    failed: int
    """Failed, not counting a flow a signal cut short."""
    interrupted: int
    not_run: int
    """Specs that could not be run at all (configuration errors)."""


def flow_counts(run: RunRecord) -> FlowCounts:
    """The summary line's counts (report/terminal.py), and `report --json`'s."""
    flows = run.flows
    return FlowCounts(
        passed=sum(flow.verdict == "pass" for flow in flows),
        failed=sum(flow.verdict == "fail" and flow.interrupted is None for flow in flows),
        interrupted=sum(flow.interrupted is not None for flow in flows),
        not_run=len(run.errors),
    )


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


def flow_warnings(flow: FlowRecord) -> list[str]:
    """The flow's warnings, then the requests refused from outside the agent when there were
    any: what every report and the terminal list under a flow."""
    refused = flow.refused_from_outside
    outside = (
        f"refused requests from outside the agent: {refused} (sent to flowproof's proxy or an "
        "MCP stand-in without the flow's capability; none was forwarded, served or recorded)"
    )
    return [*flow.warnings, *([outside] if refused else [])]


def declared_phrase(flow: FlowRecord) -> str:
    """`normalize:` and `ignore_fields:` as every report shows them beside the turn counts."""
    parts = []
    if flow.normalized:
        parts.append(f"normalised: {', '.join(flow.normalized)}")
    if flow.ignored_fields:
        parts.append(f"matched ignoring: {', '.join(flow.ignored_fields)}")
    return " · ".join(parts)


def tool_lanes(flow: FlowRecord) -> list[Any]:
    """Each lane with rows of its own, drawn as its kind draws it (`LaneKind.lane_view`: an
    MCP lane's is report/view.py's `McpLaneView`), in the record's order; a lane that diverged
    on its first call is drawn too."""
    rows: dict[str, list[Any]] = {}
    for row in flow.timeline:
        if not isinstance(row, TimelineEntry):
            rows.setdefault(row.lane, []).append(row)
    divergence = flow.divergence
    diverged_on = divergence.lane if divergence is not None and divergence.on_mcp else None
    if diverged_on is not None:
        rows.setdefault(diverged_on, [])
    views = []
    for lane, entries in rows.items():
        kind = kind_named(lane.partition(".")[0])
        view = kind.lane_view(lane, entries, lane == diverged_on) if kind is not None else None
        if view is not None:
            views.append(view)
    return views


def mcp_calls(flow: FlowRecord) -> int:
    """Calls on every tool lane together. A timeline of model turns alone has none, and is
    told so without drawing a lane."""
    if all(isinstance(row, TimelineEntry) for row in flow.timeline):
        return 0
    return sum(int(lane.calls) for lane in tool_lanes(flow))

"""A reviewable trajectory diff between two traces of the same flow.

A re-record is the moment drift is accepted, so the reviewer needs what CHANGED in behaviour,
not a byte diff of two cassettes: the tool-call sequence, the arguments by path, and the
request-level inputs the agent controls (system prompt, offered tools and their schemas, model),
and then, turn by turn, every other field of a request that changed (an id the agent now echoes
in lower case changes no answer of the model, but it is what the next replay compares).
"""

from __future__ import annotations

from typing import Any

from flowproof.dialects.base import tool_name
from flowproof.matching.divergence import Difference, FieldDifferences, field_differences
from flowproof.trace.changes import call_changes, shown, value_changes
from flowproof.trace.model import Trace
from flowproof.trace.trajectory import build_trajectory, main_thread


def diff_traces(old: Trace, new: Trace) -> list[str]:
    """One line per change, most behavioural first; empty when nothing a reviewer cares about
    changed."""
    before, after = build_trajectory(old.turns), build_trajectory(new.turns)
    lines = list(call_changes(before.tool_calls, after.tool_calls))
    lines += _request_changes(old, new)
    lines += turn_request_changes(old, new)
    if before.reply != after.reply:
        lines.append(f"reply: {shown(before.reply)} → {shown(after.reply)}")
    return lines


def _request_changes(old: Trace, new: Trace) -> list[str]:
    if not old.turns or not new.turns:
        return []
    was, now = main_thread(old.turns)[0], main_thread(new.turns)[0]
    lines = []
    if was.dialect != now.dialect:
        lines.append(f"dialect: {was.dialect} → {now.dialect}")
    old_facts, new_facts = was.facts, now.facts
    if old_facts and new_facts:
        old_system, new_system = old_facts.system_prompt, new_facts.system_prompt
        if old_system != new_system:
            lines.append(f"system prompt changed: {shown(old_system)} → {shown(new_system)}")
    old_tools, new_tools = _tools(was.request), _tools(now.request)
    added = [name for name in new_tools if name not in old_tools]
    removed = [name for name in old_tools if name not in new_tools]
    changed = [
        name for name in new_tools if name in old_tools and old_tools[name] != new_tools[name]
    ]
    if added:
        lines.append(f"tools offered: added {', '.join(added)}")
    if removed:
        lines.append(f"tools offered: removed {', '.join(removed)}")
    for name in changed:
        lines.append(
            f"tool schema changed: {name}: "
            f"{'; '.join(value_changes(old_tools[name], new_tools[name]))}"
        )
    old_model, new_model = _get(was.request, "model"), _get(now.request, "model")
    if old_model != new_model:
        lines.append(f"model: {shown(old_model)} → {shown(new_model)}")
    return lines


def _tools(request: Any) -> dict[str, Any]:
    tools = _get(request, "tools") or []
    named = {}
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            named[tool_name(tool)] = tool
    return named


def _get(body: Any, key: str) -> Any:
    return body.get(key) if isinstance(body, dict) else None


SUMMARISED_KEYS = ("tools", "model")
"""Request keys the lines above word once for the whole trace (`tools offered`, `model`)."""


def turn_request_changes(old: Trace, new: Trace) -> list[str]:
    """`turn N request: PATH: was → now` for every field of a request that differs from the
    previous trace's request at the same position, in the form divergences use
    (matching/divergence.py); a turn the previous trace lacks is the call sequence's business."""
    lines = []
    for number, (was, now) in enumerate(zip(old.turns, new.turns, strict=False), 1):
        found = request_fields(was.request, now.request)
        lines += [f"turn {number} request: {_field(difference)}" for difference in found.shown]
        if found.unshown:
            lines.append(f"turn {number} request: ... and {found.unshown} more differing fields")
    return lines


def request_fields(was: Any, now: Any) -> FieldDifferences:
    """The fields at which two requests differ, the trace-wide keys left out."""
    return field_differences(_without_summarised(was), _without_summarised(now))


def _without_summarised(request: Any) -> Any:
    if not isinstance(request, dict):
        return request
    return {key: value for key, value in request.items() if key not in SUMMARISED_KEYS}


def _field(difference: Difference) -> str:
    kind = f"{difference.note}: " if difference.note else ""
    return f"{difference.path}: {kind}{difference.recorded} → {difference.replayed}"

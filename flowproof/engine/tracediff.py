"""A reviewable trajectory diff between two traces of the same flow.

A re-record is the moment drift is accepted, so the reviewer needs what CHANGED in behaviour,
not a byte diff of two cassettes: the tool-call sequence, the arguments by path, and the
request-level inputs the agent controls (system prompt, offered tools and their schemas, model).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from typing import Any

from flowproof.assertions.paths import ABSENT, differences, format_path
from flowproof.assertions.trajectory import ToolCall
from flowproof.dialects import dialect_named
from flowproof.dialects.base import tool_name
from flowproof.engine.trajectory import build_trajectory, main_thread
from flowproof.trace.model import Trace

_SHOWN = 120


def diff_traces(old: Trace, new: Trace) -> list[str]:
    """One line per change, most behavioural first; empty when nothing a reviewer cares about
    changed."""
    before, after = build_trajectory(old.turns), build_trajectory(new.turns)
    lines = list(call_changes(before.tool_calls, after.tool_calls))
    lines += _request_changes(old, new)
    if before.reply != after.reply:
        lines.append(f"reply: {_show(before.reply)} → {_show(after.reply)}")
    return lines


def call_changes(old: tuple[ToolCall, ...], new: tuple[ToolCall, ...]) -> Iterator[str]:
    old_names, new_names = [c.name for c in old], [c.name for c in new]
    if old_names != new_names:
        yield (
            f"tool calls: previously {_sequence(old_names)}; now {_sequence(new_names)}"
            f"{_edits(old_names, new_names)}"
        )
    matcher = difflib.SequenceMatcher(a=old_names, b=new_names, autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            was, now = old[block.a + offset], new[block.b + offset]
            changes = list(_differences(was.arguments, now.arguments))
            if changes:
                yield f"{now.name} (call {block.b + offset + 1}) arguments: {'; '.join(changes)}"


def _edits(old: list[str], new: list[str]) -> str:
    added, removed = [], []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag in ("insert", "replace"):
            added += new[b1:b2]
        if tag in ("delete", "replace"):
            removed += old[a1:a2]
    parts = [f"now also calls {', '.join(added)}"] if added else []
    parts += [f"no longer calls {', '.join(removed)}"] if removed else []
    return f" ({'; '.join(parts)})" if parts else " (same calls, new order)"


def _sequence(names: list[str]) -> str:
    return " → ".join(names) if names else "no tool calls"


def _request_changes(old: Trace, new: Trace) -> list[str]:
    if not old.turns or not new.turns:
        return []
    was, now = main_thread(old.turns)[0], main_thread(new.turns)[0]
    lines = []
    if was.dialect != now.dialect:
        lines.append(f"dialect: {was.dialect} → {now.dialect}")
    old_dialect, new_dialect = dialect_named(was.dialect), dialect_named(now.dialect)
    if old_dialect and new_dialect:
        old_system = old_dialect.system_prompt(was.request)
        new_system = new_dialect.system_prompt(now.request)
        if old_system != new_system:
            lines.append(f"system prompt changed: {_show(old_system)} → {_show(new_system)}")
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
            f"{'; '.join(_differences(old_tools[name], new_tools[name]))}"
        )
    old_model, new_model = _get(was.request, "model"), _get(now.request, "model")
    if old_model != new_model:
        lines.append(f"model: {_show(old_model)} → {_show(new_model)}")
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


def _differences(old: Any, new: Any) -> Iterator[str]:
    """Every leaf path whose value differs (dotted, like assertion paths). A list that changed
    length is shown whole: position-by-position lines would misreport an insertion."""
    for path, was, now in differences(old, new, whole_uneven_lists=True):
        yield f"{format_path(path) or '(whole)'}: {_show(was)} → {_show(now)}"


def _show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    if value is None:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"

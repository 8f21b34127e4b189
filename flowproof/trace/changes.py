"""What changed between two recordings, worded for the reviewer of a re-record: the calls made
(their sequence, then each kept call's arguments by path) and single values shown briefly.

Every lane kind words its own changes with these (the model lane in matching/tracediff.py, the
MCP lane in mcp/kind.py), so `record --diff` reads the same for every boundary.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from flowproof.assertions.paths import ABSENT, differences, format_path
from flowproof.guards.spellings import clip

_SHOWN = 120


class Call(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> Any: ...


def call_changes(old: Sequence[Call], new: Sequence[Call]) -> Iterator[str]:
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
            changes = list(value_changes(was.arguments, now.arguments))
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


def value_changes(old: Any, new: Any) -> Iterator[str]:
    """Every leaf path whose value differs (dotted, like assertion paths). A list that changed
    length is shown whole: position-by-position lines would misreport an insertion."""
    for path, was, now in differences(old, new, whole_uneven_lists=True):
        yield f"{format_path(path) or '(whole)'}: {shown(was)} → {shown(now)}"


def shown(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    if value is None:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False)
    return clip(text, _SHOWN - 1) if len(text) > _SHOWN else text

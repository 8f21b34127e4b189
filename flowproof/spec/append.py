"""Add step lines to a spec's text without rewriting the rest of it.

A spec is written by hand: its comments, blank lines, quoting and key order are the author's.
Loading it and dumping it back would lose all of those, so new steps are inserted as text,
right after the last line of the last item of the `steps:` list, at that list's indentation.
The result is read back and must hold exactly the old steps followed by the new ones, with
every other key unchanged; anything else (a flow-style `steps: [...]`, a layout this reading
does not expect) is refused with the reason, and the file is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import yaml

from flowproof.core.errors import FlowproofError


class CannotAppend(FlowproofError):
    """The spec's text cannot take the steps at the end of its `steps:` list."""


def append_steps(text: str, render: Callable[[str], list[str]], expected: Sequence[Any]) -> str:
    """`text` with the lines `render(indent)` gives added to its `steps:` list.

    `expected` is what those lines must read back as (one step mapping each), checked before
    the text is returned."""
    steps = _steps_node(text)
    if steps.flow_style:
        raise CannotAppend(
            "its steps: list is written in flow style (steps: [...]), which cannot take new "
            "lines; write it as a block list (one `- ` item a line), or paste the printed "
            "steps by hand"
        )
    lines = text.splitlines(keepends=True)
    after = _last_content_line(lines, steps)
    if not lines[after].endswith("\n"):
        lines[after] += "\n"
    indent = " " * steps.start_mark.column
    added = [line + "\n" for line in render(indent)]
    result = "".join([*lines[: after + 1], *added, *lines[after + 1 :]])
    _check_reads_back(text, result, expected)
    return result


def _steps_node(text: str) -> yaml.SequenceNode:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise CannotAppend(f"it is not valid YAML ({exc})") from None
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "steps" and isinstance(value, yaml.SequenceNode) and value.value:
                return value
    raise CannotAppend("it has no steps: list to add to")


def _last_content_line(lines: Sequence[str], steps: yaml.SequenceNode) -> int:
    """The last line of the list's last item: the list's end, less the blank lines and
    comments that follow it (they belong to whatever comes next)."""
    end = steps.end_mark.line if steps.end_mark.column > 0 else steps.end_mark.line - 1
    end = min(end, len(lines) - 1)
    while end > steps.start_mark.line and _is_blank_or_comment(lines[end]):
        end -= 1
    return end


def _is_blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _check_reads_back(before: str, after: str, expected: Sequence[Any]) -> None:
    old, new = yaml.safe_load(before), yaml.safe_load(after)
    wanted = {**old, "steps": [*old["steps"], *expected]}
    if new != wanted:
        raise CannotAppend(
            "the steps added as text would not read back as written (an unusual layout of "
            "the steps: list); paste the printed steps by hand"
        )

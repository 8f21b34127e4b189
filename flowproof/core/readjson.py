"""The one way flowproof reads JSON it did not just produce: traces, run records, and the
tool-call arguments a model sends.

Python's `json.loads` accepts things flowproof must not: `NaN` and `Infinity` (not JSON; an
agent served one gets a body its own parser rejects), a key twice in one object (the parser
keeps the last copy, so a check of the parsed value never sees the first, the one a reviewer
may be reading in the file), nesting deep enough to exhaust the interpreter's stack in
whatever walks the value next, and integers too long for Python's integer-string limit (a bare
ValueError). `read_json` refuses each of them with an `UnreadableJson` naming the path in the
document where it is, so every caller turns it into its own clear error instead of a crash.

The parser itself refuses the constants, the duplicated keys and the long integers, and the
depth is counted from the brackets outside strings; only when one of them is found does a
slower pass over the text's tokens (structure, strings, constants, numbers) locate it, so the
error can name the path.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

MAX_DEPTH = 128
"""The deepest nesting of objects and lists flowproof reads (the whole document is level 1).
Real request bodies, responses and tool arguments stay far below it (a tool's JSON Schema is a
few dozen levels at most); the bound keeps every recursive walk over a value well inside
Python's stack."""

_SHOWN_PATH_PARTS = 12
"""How much of a path an error shows: a path as deep as the limit would be hundreds of
characters of `[0]`."""

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
"""A JSON string, escapes included (unrolled, so a long string is matched in one sweep)."""
_STRINGS = re.compile(_STRING, re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_TOKEN = re.compile(
    _STRING  # a string (a key or a value)
    + r"|[\[\]{},]"  # structure
    r"|NaN|-?Infinity"  # constants Python accepts and JSON does not
    r"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?",  # a number, consumed whole
    re.DOTALL,
)


class UnreadableJson(ValueError):
    """Text flowproof refuses to read as JSON. `path` is where in the document (empty for
    the top level or a syntax error), `problem` what is wrong there; `syntax` is True when the
    text is not JSON at all (`problem` is then the parser's own message, with its position)."""

    def __init__(self, problem: str, path: str = "", *, syntax: bool = False) -> None:
        shown = f"not valid JSON ({problem})" if syntax else problem
        super().__init__(f"{path}: {shown}" if path else shown)
        self.problem = problem
        self.path = path
        self.syntax = syntax


def read_json(text: str) -> Any:
    """The JSON value of `text`, or UnreadableJson (a ValueError) saying why and where."""
    try:
        value = json.loads(text, parse_constant=_refuse, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise UnreadableJson(str(exc), syntax=True) from None
    except (RecursionError, ValueError):
        value = _UNREAD  # too deep, NaN, a key twice or a too-long integer: located below
    if value is _UNREAD or _too_deep(value, text):
        _scan(text)  # slower, and run only when there is something to find: raises with the path
        raise UnreadableJson("not readable JSON")  # the parser refused what the scan did not
    return value


_UNREAD = object()


def _refuse(name: str) -> Any:
    raise ValueError(name)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise ValueError("a key twice")
    return value


_CHARACTERS_PER_VISIT = 256
"""How many characters of text buy one visit of a value by `_too_deep`'s walk: past that,
the brackets of the text are counted instead."""


def _too_deep(value: Any, text: str) -> bool:
    """Whether `value`, parsed from `text`, nests deeper than MAX_DEPTH. Walked when it holds
    few values for its length (a trace is mostly long strings: a few milliseconds for 50 MB);
    otherwise `_depth` counts the brackets of the text, which costs the same whatever it holds."""
    budget = len(text) // _CHARACTERS_PER_VISIT
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        items = container.values() if isinstance(container, dict) else container
        budget -= len(items)
        if budget < 0:
            return _depth(text) > MAX_DEPTH
        stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return False


def _depth(text: str) -> int:
    """The deepest nesting in `text`, counted without the strings (a bracket in a string is
    text); the common case, a readable document, costs no walk in Python."""
    brackets = _BRACKET.findall(_STRINGS.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


@dataclass(slots=True)
class _Level:
    """One open object or list while scanning."""

    is_object: bool
    key: str | None = None
    """The key whose value is being read (objects)."""
    index: int = 0
    """The index of the item being read (lists)."""
    expect_key: bool = True
    keys: set[str] = field(default_factory=set)


def _scan(text: str) -> None:
    """Refuse the first too-deep container, duplicated key, NaN/Infinity or over-long integer."""
    levels: list[_Level] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            if len(levels) >= MAX_DEPTH:
                raise UnreadableJson(
                    f"too deeply nested (more than {MAX_DEPTH} levels of objects and lists)",
                    _path(levels),
                )
            levels.append(_Level(is_object=first == "{"))
        elif first in "]}":
            if levels:
                levels.pop()
        elif first == ",":
            if levels and levels[-1].is_object:
                levels[-1].expect_key = True
            elif levels:
                levels[-1].index += 1
        elif first == '"':
            if levels and levels[-1].is_object and levels[-1].expect_key:
                _enter_key(levels[-1], token, levels)
        elif first == "N" or token.endswith("Infinity"):
            raise UnreadableJson(
                f"{token} is not a JSON number; write a number or null", _path(levels)
            )
        else:
            _check_number(token, levels)


def _enter_key(level: _Level, token: str, levels: list[_Level]) -> None:
    key = json.loads(token) if "\\" in token else token[1:-1]
    level.key, level.expect_key = key, False
    if key in level.keys:
        raise UnreadableJson(
            f"the key {key!r} appears twice in one object (a reader keeps only one copy)",
            _path(levels),
        )
    level.keys.add(key)


def _check_number(token: str, levels: list[_Level]) -> None:
    limit = sys.get_int_max_str_digits()
    digits = len(token.lstrip("-"))
    if limit and digits > limit and not any(c in token for c in ".eE"):
        raise UnreadableJson(
            f"an integer of {digits} digits (more than the {limit} Python reads)",
            _path(levels),
        )


def _path(levels: list[_Level]) -> str:
    parts = []
    for level in levels:
        if level.is_object:
            if level.key is not None and not level.expect_key:
                parts.append(f".{level.key}")
        else:
            parts.append(f"[{level.index}]")
    shown = "".join(parts[:_SHOWN_PATH_PARTS]).lstrip(".")
    if len(parts) > _SHOWN_PATH_PARTS:
        shown += f"… ({len(parts) - _SHOWN_PATH_PARTS} levels more)"
    return shown

"""Dotted paths into JSON values: `passengers.0.name`.

A path is a tuple of segments. Parsed from spec text every segment is a `str`, and whether
`"0"` is a list index or a dict key is decided by the container it meets, not by the parser:
`{"0": "x"}` and `["x"]` are both reached by `0`. Code that builds paths while walking a value
(a divergence diff, say) may use `int` segments for list positions; an `int` meeting a dict
looks up its decimal string, so `format_path` followed by `parse_path` reaches the same place.

Absence is an answer, not an error: `lookup` tells a missing key (or an index past the end, or
a step into a string) apart from a key that is present and holds JSON `null`.

A key that itself contains a dot cannot be addressed; no spec has needed one yet.

`walk` and `differences` are the one way flowproof walks a JSON value: the secret scan, the
divergence diff and the trace diff all go through them, so "where" means the same everywhere.
Paths they yield use `str` segments for dict keys and `int` segments for list positions; a
place only one side of a comparison has holds `ABSENT` on the other, never `None` (which is JSON
null).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

Segment = str | int
"""One step of a path: a dict key, or a list index."""

Path = tuple[Segment, ...]
"""A whole path, outermost segment first. The empty path is the value itself."""


@dataclass(frozen=True, slots=True)
class Lookup:
    """The result of following a path into a value."""

    present: bool
    """True when every segment resolved; a JSON null at the end is still present."""
    value: Any = None
    """The value found; None when absent (check `present`, not this, to tell null apart)."""
    depth: int = 0
    """How many segments resolved before the walk stopped (the path's length when present)."""


def parse_path(text: str) -> Path:
    """Split `a.b.0.c` into segments; an empty path or an empty segment is a ValueError."""
    if text == "":
        raise ValueError("empty path")
    segments = tuple(text.split("."))
    if "" in segments:
        raise ValueError(f"path '{text}' has an empty segment")
    return segments


class _Absent:
    """The type of `ABSENT`."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Final[Any] = _Absent()
"""The value on the side of a comparison that has no such key or index."""


def format_path(path: Path) -> str:
    """The dotted form of a path, as a spec would spell it (the empty path is '')."""
    text = ""
    for segment in path:
        # Built like format_indexed, so a body key that is "" reads the same in both forms.
        text = f"{text}.{segment}" if text else str(segment)
    return text


def format_indexed(path: Path) -> str:
    """The form a body's path takes in messages: list positions in brackets,
    `messages[1].content`, `[0].name` (the empty path is '')."""
    text = ""
    for segment in path:
        if isinstance(segment, int):
            text = f"{text}[{segment}]"
        else:
            text = f"{text}.{segment}" if text else segment
    return text


def walk(value: Any, at: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every node of `value` with its path, parents before children, dict keys in their order
    (a key's own text is the last segment of its child's path)."""
    yield at, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, (*at, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, (*at, index))


def differences(
    a: Any, b: Any, *, exact: bool = False, whole_uneven_lists: bool = False
) -> Iterator[tuple[Path, Any, Any]]:
    """Every place where `a` and `b` differ, as (path, a's value, b's value), `ABSENT` for the
    side that lacks the place; empty when they are equal.

    Two dicts are walked key by key, `a`'s keys in order then `b`'s new ones; two lists position
    by position (`whole_uneven_lists`: lists of different lengths are one differing value);
    anything else is compared whole.

    `exact` compares the way replay matching does: `1`, `1.0` and `true` differ, and two dicts
    holding the same keys in a different order are themselves a difference, yielded (both
    dicts) after their children.
    """
    yield from _differences(a, b, (), exact, whole_uneven_lists)


def _differences(
    a: Any, b: Any, at: Path, exact: bool, whole_uneven_lists: bool
) -> Iterator[tuple[Path, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            yield from _differences(
                a.get(key, ABSENT), b.get(key, ABSENT), (*at, str(key)), exact, whole_uneven_lists
            )
        if exact and list(a) != list(b) and a.keys() == b.keys():
            yield at, a, b
    elif (
        isinstance(a, list)
        and isinstance(b, list)
        and not (whole_uneven_lists and len(a) != len(b))
    ):
        for index in range(max(len(a), len(b))):
            yield from _differences(
                a[index] if index < len(a) else ABSENT,
                b[index] if index < len(b) else ABSENT,
                (*at, index),
                exact,
                whole_uneven_lists,
            )
    elif not _same(a, b, exact):
        yield at, a, b


def _same(a: Any, b: Any, exact: bool) -> bool:
    # JSON decides 1 == 1.0 == true in Python; a replayed body that changed one into another
    # did change its bytes, so exact comparison also asks for the same type.
    return a == b and (not exact or type(a) is type(b))


def lookup(value: Any, path: Path) -> Lookup:
    """Follow `path` into `value`, stopping at the first segment that does not resolve."""
    current = value
    for depth, segment in enumerate(path):
        found, current = _step(current, segment)
        if not found:
            return Lookup(present=False, depth=depth)
    return Lookup(present=True, value=current, depth=len(path))


def _step(container: Any, segment: Segment) -> tuple[bool, Any]:
    if isinstance(container, dict):
        key = str(segment)
        if key in container:
            return True, container[key]
        return False, None
    if isinstance(container, list):
        index = _as_index(segment)
        # No negative indices: `-1` counting from the end would make a spec that asserts on
        # "the last passenger" pass against a list of any length, which hides drift.
        if index is not None and index < len(container):
            return True, container[index]
        return False, None
    # A string, number, bool or null has no children; descending into one finds nothing.
    return False, None


def _as_index(segment: Segment) -> int | None:
    if isinstance(segment, bool):
        return None
    if isinstance(segment, int):
        return segment if segment >= 0 else None
    # isascii() first: str.isdigit() is also true for characters such as '²' that int() rejects.
    if segment.isascii() and segment.isdigit():
        return int(segment)
    return None

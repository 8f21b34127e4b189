"""Dotted paths into JSON values: `passengers.0.name`.

A path is a tuple of segments. Parsed from spec text every segment is a `str`, and whether
`"0"` is a list index or a dict key is decided by the container it meets, not by the parser:
`{"0": "x"}` and `["x"]` are both reached by `0`. Code that builds paths while walking a value
(a divergence diff, say) may use `int` segments for list positions; an `int` meeting a dict
looks up its decimal string, so `format_path` followed by `parse_path` reaches the same place.

Absence is an answer, not an error: `lookup` tells a missing key (or an index past the end, or
a step into a string) apart from a key that is present and holds JSON `null`.

A key that itself contains a dot cannot be addressed; no spec has needed one yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def format_path(path: Path) -> str:
    """The dotted form of a path, as a spec would spell it (the empty path is '')."""
    return ".".join(str(segment) for segment in path)


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

"""Trace ⇄ JSON, with a format version and a forward-migration chain.

The file is pretty-printed and each body is stored as its parsed JSON value, so a changed
prompt shows up in review as one changed line. `ensure_ascii=False` keeps non-English prompts
readable in diffs.

    format 2   {"format_version": 2, "flowproof_version": ..., "lanes": {"model": [turn, ...]}}
    format 1   {"format_version": 1, "flowproof_version": ..., "turns": [turn, ...]}

Reading migrates an older document one version at a time (`_MIGRATIONS`) and refuses a newer
one, naming both versions: a trace from a newer flowproof may hold lanes this one cannot serve,
and half-serving it would turn a test green for the wrong reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flowproof import __version__
from flowproof.errors import TraceError
from flowproof.trace.model import MODEL_LANE, Lane, Trace, Turn

FORMAT_VERSION = 2
"""Bump when the layout changes, and add a `migrate_N_to_N+1` to `_MIGRATIONS`."""

Document = dict[str, Any]


def _migrate_1_to_2(document: Document) -> Document:
    """Format 1 knew only model turns: they become the `model` lane."""
    migrated = {key: value for key, value in document.items() if key != "turns"}
    migrated["format_version"] = 2
    migrated["lanes"] = {MODEL_LANE: document.get("turns", [])}
    return migrated


_MIGRATIONS: dict[int, Callable[[Document], Document]] = {1: _migrate_1_to_2}


def _encode_turn(turn: Turn) -> Document:
    return {"dialect": turn.dialect, "request": turn.request, "response": turn.response}


def _decode_turn(data: Document) -> Turn:
    return Turn(data["dialect"], data["request"], data["response"])


_ENTRY_CODECS: dict[str, tuple[Callable[[Any], Document], Callable[[Document], Any]]] = {
    MODEL_LANE: (_encode_turn, _decode_turn),
}
"""Per lane kind: how one entry is written and read."""


def encode(trace: Trace) -> str:
    lanes = {}
    for lane in trace.lanes:
        write, _ = _ENTRY_CODECS[lane.kind]
        lanes[lane.name] = [write(entry) for entry in lane.entries]
    document = {
        "format_version": FORMAT_VERSION,
        "flowproof_version": trace.flowproof_version,
        "lanes": lanes,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def decode(text: str, source: str) -> Trace:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(
            f"{source}: not a readable trace ({exc}); re-record it with `flowproof record`"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("format_version"), int):
        raise TraceError(f"{source}: not a flowproof trace (no format_version)")
    document = migrate(document, source)
    try:
        lanes = tuple(_decode_lane(name, entries, source) for name, entries in _lanes(document))
        version = str(document.get("flowproof_version", ""))
    except (KeyError, TypeError) as exc:
        raise TraceError(f"{source}: malformed trace ({exc!r} missing or wrong)") from None
    if not any(lane.name == MODEL_LANE for lane in lanes):
        lanes = (Lane(MODEL_LANE, ()), *lanes)
    return Trace(lanes=lanes, flowproof_version=version)


def _lanes(document: Document) -> list[tuple[str, Any]]:
    lanes = document["lanes"]
    if not isinstance(lanes, dict):
        raise TypeError("'lanes' is not an object")
    return list(lanes.items())


def _decode_lane(name: str, entries: Any, source: str) -> Lane:
    kind = name.split(".", 1)[0]
    if kind not in _ENTRY_CODECS:
        known = ", ".join(_ENTRY_CODECS)
        raise TraceError(
            f"{source}: lane {name!r} is of a kind this flowproof does not know "
            f"(known: {known}); upgrade flowproof"
        )
    _, read = _ENTRY_CODECS[kind]
    return Lane(name, tuple(read(entry) for entry in entries))


def migrate(document: Document, source: str) -> Document:
    version = document["format_version"]
    if version > FORMAT_VERSION:
        raise TraceError(
            f"{source}: this trace was written by a newer flowproof (format {version}); "
            f"upgrade flowproof: this one ({__version__}) reads trace formats up to "
            f"{FORMAT_VERSION}"
        )
    while version < FORMAT_VERSION:
        document = _MIGRATIONS[version](document)
        version = document["format_version"]
    return document

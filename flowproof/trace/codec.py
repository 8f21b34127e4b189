"""Trace ⇄ JSON, with a format version and a forward-migration chain.

The file is pretty-printed and each body is stored as its parsed JSON value, so a changed
prompt shows up in review as one changed line. `ensure_ascii=False` keeps non-English prompts
readable in diffs.

    format 3   {"format_version": 3, "flowproof_version": ..., "lanes": {"model": [turn, ...],
                "mcp.<server>": [call | notification | server_request, ...]}}
    format 2   {"format_version": 2, "flowproof_version": ..., "lanes": {"model": [turn, ...]}}
    format 1   {"format_version": 1, "flowproof_version": ..., "turns": [turn, ...]}

Reading migrates an older document one version at a time (`_MIGRATIONS`) and refuses a newer
one, naming both versions: a trace from a newer flowproof may hold lanes this one cannot serve,
and half-serving it would turn a test green for the wrong reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from flowproof import __version__
from flowproof.errors import TraceError
from flowproof.lanes import MODEL_LANE
from flowproof.mcp.lane import Call, Entry, Notice, ServerRequest
from flowproof.trace.model import Lane, Trace, Turn

FORMAT_VERSION = 3
"""Bump when the layout changes, and add a `migrate_N_to_N+1` to `_MIGRATIONS`."""

Document = dict[str, Any]


def _migrate_1_to_2(document: Document) -> Document:
    """Format 1 knew only model turns: they become the `model` lane."""
    migrated = {key: value for key, value in document.items() if key != "turns"}
    migrated["format_version"] = 2
    migrated["lanes"] = {MODEL_LANE: document.get("turns", [])}
    return migrated


def _migrate_2_to_3(document: Document) -> Document:
    """Format 3 added MCP lanes (`mcp.<server>`); a format-2 trace has none, so only the number
    changes. The bump keeps an older flowproof from half-serving a trace with tool lanes."""
    return {**document, "format_version": 3}


_MIGRATIONS: dict[int, Callable[[Document], Document]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3}


def _encode_turn(turn: Turn) -> Document:
    return {"dialect": turn.dialect, "request": turn.request, "response": turn.response}


def _decode_turn(data: Any, where: str) -> Turn:
    turn = _expect(data, dict, where)
    dialect = _expect(_field(turn, "dialect", where), str, f"{where}.dialect")
    return Turn(dialect, _field(turn, "request", where), _field(turn, "response", where))


def _encode_mcp(entry: Entry) -> Document:
    if isinstance(entry, Call):
        written: Document = {"call": entry.request, "answer": entry.answer}
        return {**written, "mocked": True} if entry.mocked else written
    if isinstance(entry, Notice):
        return {"notification": entry.message, "after": entry.after}
    return {"server_request": entry.request, "answer": entry.answer, "after": entry.after}


def _decode_mcp(data: Any, where: str) -> Entry:
    entry = _expect(data, dict, where)
    if "call" in entry:
        request = _expect(entry["call"], dict, f"{where}.call")
        answer = _expect(_field(entry, "answer", where), dict, f"{where}.answer")
        mocked = _expect(entry.get("mocked", False), bool, f"{where}.mocked")
        return Call(request, answer, mocked)
    after = _expect(_field(entry, "after", where), int, f"{where}.after")
    if "notification" in entry:
        return Notice(_expect(entry["notification"], dict, f"{where}.notification"), after)
    if "server_request" in entry:
        request = _expect(entry["server_request"], dict, f"{where}.server_request")
        answer = _expect(_field(entry, "answer", where), dict, f"{where}.answer")
        return ServerRequest(request, answer, after)
    raise _Malformed(f"{where} is none of call, notification, server_request")


_ENTRY_CODECS: dict[str, tuple[Callable[[Any], Document], Callable[[Any, str], Any]]] = {
    MODEL_LANE: (_encode_turn, _decode_turn),
    "mcp": (_encode_mcp, _decode_mcp),
}
"""Per lane kind: how one entry is written, and read (with where it sits, for errors)."""


class _Malformed(Exception):
    """A field of the wrong type or missing; decode() turns it into a TraceError."""


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
    """A trace from its JSON text. Every way the text can fail to be a trace is a TraceError
    naming `source` and the field at fault (`lanes.model[1]: no 'request' field`)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(
            f"{source}: not a readable trace ({exc}); re-record it with `flowproof record`"
        ) from None
    except RecursionError:
        raise TraceError(
            f"{source}: not a readable trace (nested too deeply); re-record it with "
            "`flowproof record`"
        ) from None
    if not isinstance(document, dict) or "format_version" not in document:
        raise TraceError(f"{source}: not a flowproof trace (no format_version)")
    try:
        written_as = _format_version(document)
        document = migrate(document, source)
        version = _expect(document.get("flowproof_version", ""), str, "flowproof_version")
        lanes = tuple(
            _decode_lane(name, entries, source, written_as)
            for name, entries in _expect(
                _field(document, "lanes", "the trace"), dict, "lanes"
            ).items()
        )
    except _Malformed as exc:
        raise TraceError(
            f"{source}: malformed trace: {exc}; re-record it with `flowproof record`"
        ) from None
    if not any(lane.name == MODEL_LANE for lane in lanes):
        lanes = (Lane(MODEL_LANE, ()), *lanes)
    return Trace(lanes=lanes, flowproof_version=version)


def _format_version(document: Document) -> int:
    version = _expect(document["format_version"], int, "format_version")
    if version < 1:
        raise _Malformed(
            f"format_version is {version}; trace formats are numbered from 1 to {FORMAT_VERSION}"
        )
    return version


def _decode_lane(name: str, entries: Any, source: str, written_as: int) -> Lane:
    kind = name.split(".", 1)[0]
    if kind not in _ENTRY_CODECS:
        known = ", ".join(_ENTRY_CODECS)
        raise TraceError(
            f"{source}: lane {name!r} is of a kind this flowproof does not know "
            f"(known: {known}); upgrade flowproof"
        )
    # A format-1 trace kept its model turns under "turns": name the field the file holds.
    where = "turns" if written_as == 1 and name == MODEL_LANE else f"lanes.{name}"
    _, read = _ENTRY_CODECS[kind]
    items = _expect(entries, list, where)
    return Lane(name, tuple(read(entry, f"{where}[{index}]") for index, entry in enumerate(items)))


_JSON_TYPES: dict[type, str] = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}

T = TypeVar("T")


def _expect(value: Any, expected: type[T], where: str) -> T:
    if isinstance(value, expected) and not (expected is int and isinstance(value, bool)):
        return value
    shown = json.dumps(value, ensure_ascii=False)
    if len(shown) > 40:
        shown = shown[:40] + "…"
    raise _Malformed(
        f"{where} is {shown} ({_JSON_TYPES.get(type(value), 'a value')}), not "
        f"{'an integer' if expected is int else _JSON_TYPES[expected]}"
    )


def _field(document: Document, key: str, where: str) -> Any:
    if key not in document:
        raise _Malformed(f"{where} has no {key!r} field")
    return document[key]


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

"""Trace ⇄ JSON, with a format version and a forward-migration chain.

The file is pretty-printed and each body is stored as its parsed JSON value, so a changed
prompt shows up in review as one changed line. `ensure_ascii=False` keeps non-English prompts
readable in diffs.

    format 6   as format 5; a model turn of a `conversation:` flow carries `conversation_turn`,
               the user turn (1, 2, ...) during which the agent sent it
    format 5   as format 4, plus `file_sha256` (the file's own digest, below); a model turn may
               carry `request_sha256`, the digest of the bytes the agent sent (matching/exact.py)
    format 4   {"format_version": 4, "flowproof_version": ..., "normalized_by_default": ["cwd",
                "home", "tmpdir"], "lanes": {...}}
    format 3   {"format_version": 3, "flowproof_version": ..., "lanes": {"model": [turn, ...],
                "mcp.<server>": [call | notification | server_request, ...]}}
    format 2   {"format_version": 2, "flowproof_version": ..., "lanes": {"model": [turn, ...]}}
    format 1   {"format_version": 1, "flowproof_version": ..., "turns": [turn, ...]}

Reading migrates an older document one version at a time (`_MIGRATIONS`) and refuses a newer
one, naming both versions: a trace from a newer flowproof may hold lanes this one cannot serve,
and half-serving it would turn a test green for the wrong reason.

`file_sha256` is the SHA-256 of the file as flowproof wrote it, with that value left empty. A
turn's `request_sha256` vouches for its stored request only while the file is as written: a
request edited by hand beside an unchanged digest would otherwise be served to the agent's
old bytes unread, and the edit never judged. So a file whose digest no longer holds (edited,
reformatted, or written without one) is read with `unedited` False, and replay reads every
request of it (the verdict is the same; only the shortcut is lost).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from flowproof._version import __version__
from flowproof.core.errors import TraceError
from flowproof.core.lanes import MODEL_LANE
from flowproof.core.readjson import UnreadableJson, read_json
from flowproof.trace.kinds import LaneKind, Malformed, expect, field, kind_named, known_kinds
from flowproof.trace.model import Lane, Trace

FORMAT_VERSION = 6
"""The newest format read and written. Bump when the layout changes, and add a
`migrate_N_to_N+1` to `_MIGRATIONS`."""
SINGLE_TURN_FORMAT = 5
"""The format a trace of a single-turn flow is written in: format 6 only adds a field such a
trace never holds, so its file (and its review diff) stays as it was, and an older flowproof
still reads it."""
FILE_DIGEST = "file_sha256"
_CHUNK = 1 << 20
_FILE_DIGEST_LINE = re.compile(r'^  "file_sha256": "([0-9a-f]{64})",$', re.MULTILINE)

Document = dict[str, Any]


def _migrate_1_to_2(document: Document) -> Document:
    """Format 1 knew only model turns: they become the `model` lane. A format-1 file without
    them is malformed, never an empty trace (replaying nothing would prove nothing)."""
    migrated = {key: value for key, value in document.items() if key != "turns"}
    migrated["format_version"] = 2
    migrated["lanes"] = {MODEL_LANE: field(document, "turns", "the trace")}
    return migrated


def _migrate_2_to_3(document: Document) -> Document:
    """Format 3 added MCP lanes (`mcp.<server>`); a format-2 trace has none, so only the number
    changes. The bump keeps an older flowproof from half-serving a trace with tool lanes."""
    return {**document, "format_version": 3}


def _migrate_3_to_4(document: Document) -> Document:
    """Format 4 records the facts normalised by default. A trace written before the defaults
    normalised none: it lists none, so replay matches it with its spec's declared facts alone,
    as it was recorded. The bump keeps an older flowproof from replaying a format-4 trace
    without the defaults, where every placeholder would diverge."""
    return {**document, "format_version": 4, "normalized_by_default": []}


def _migrate_4_to_5(document: Document) -> Document:
    """Format 5 lets a model turn carry the digest of the bytes the agent sent. A format-4
    turn has none, and is always matched by reading its request; only the number changes. The
    bump keeps an older flowproof from reading a field it would not know to ignore."""
    return {**document, "format_version": 5}


def _migrate_5_to_6(document: Document) -> Document:
    """Format 6 lets a model turn say which user turn of a conversation it belongs to. A
    format-5 trace is of a single-turn flow, whose turns carry none; only the number changes.
    The bump keeps an older flowproof from serving a conversation's turns across user turns."""
    return {**document, "format_version": 6}


_MIGRATIONS: dict[int, Callable[[Document], Document]] = {
    1: _migrate_1_to_2,
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
    4: _migrate_4_to_5,
    5: _migrate_5_to_6,
}


def encode(trace: Trace) -> str:
    lanes = {}
    for lane in trace.lanes:
        kind = _kind(lane.kind)
        lanes[lane.name] = [kind.encode(entry) for entry in lane.entries]
    document = {
        "format_version": _written_format(trace),
        "flowproof_version": trace.flowproof_version,
        "normalized_by_default": list(trace.normalized_by_default),
        FILE_DIGEST: "",  # before `lanes`: the first `"file_sha256": ""` of the text is this one
        "lanes": lanes,
    }
    unsealed = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    empty = f'"{FILE_DIGEST}": ""'
    return unsealed.replace(empty, f'"{FILE_DIGEST}": "{_file_digest(unsealed)}"', 1)


def _written_format(trace: Trace) -> int:
    """The lowest format that holds the trace."""
    conversation = any(turn.conversation_turn is not None for turn in trace.turns)
    return FORMAT_VERSION if conversation else SINGLE_TURN_FORMAT


def _file_digest(text: str, skip: tuple[int, int] = (0, 0)) -> str:
    """The SHA-256 of the UTF-8 of `text` less the span `skip`, encoded a chunk at a time: a
    trace may be tens of megabytes, and a whole copy of it would double replay's peak."""
    digest = hashlib.sha256()
    for begin, end in ((0, skip[0]), (skip[1], len(text))):
        for start in range(begin, end, _CHUNK):
            chunk = text[start : min(start + _CHUNK, end)]
            digest.update(chunk.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def is_unedited(text: str) -> bool:
    """Whether `text` is a trace file as flowproof wrote it: its `file_sha256` holds."""
    head = text[: text.find('"lanes"')]  # the field precedes the lanes: only the head is searched
    found = _FILE_DIGEST_LINE.search(head)
    if found is None:
        return False
    return _file_digest(text, found.span(1)) == found.group(1)


def _kind(name: str) -> LaneKind:
    kind = kind_named(name)
    if kind is None:
        raise TraceError(f"no lane kind {name!r} in this flowproof")
    return kind


def decode(text: str, source: str) -> Trace:
    """A trace from its JSON text. Every way the text can fail to be a trace is a TraceError
    naming `source` and the field at fault (`lanes.model[1]: no 'request' field`)."""
    try:
        document = read_json(text)
    except UnreadableJson as exc:
        problem = (
            f"not a readable trace ({exc.problem})" if exc.syntax else f"malformed trace: {exc}"
        )
        raise TraceError(f"{source}: {problem}; re-record it with `flowproof record`") from None
    if not isinstance(document, dict) or "format_version" not in document:
        raise TraceError(f"{source}: not a flowproof trace (no format_version)")
    try:
        written_as = _format_version(document)
        document = migrate(document, source)
        version = expect(document.get("flowproof_version", ""), str, "flowproof_version")
        defaults = _facts(field(document, "normalized_by_default", "the trace"))
        named = expect(field(document, "lanes", "the trace"), dict, "lanes")
        # Every recording has model turns (record refuses a flow that made no request), so a
        # trace without its model lane was cut or hand-edited: refused, not replayed as empty.
        field(named, MODEL_LANE, "lanes")
        lanes = tuple(
            _decode_lane(name, entries, source, written_as) for name, entries in named.items()
        )
    except Malformed as exc:
        raise TraceError(
            f"{source}: malformed trace: {exc}; re-record it with `flowproof record`"
        ) from None
    return Trace(
        lanes=lanes,
        flowproof_version=version,
        normalized_by_default=defaults,
        unedited=is_unedited(text),
    )


def _facts(value: Any) -> tuple[str, ...]:
    names = expect(value, list, "normalized_by_default")
    for index, name in enumerate(names):
        expect(name, str, f"normalized_by_default[{index}]")
    return tuple(names)


def _format_version(document: Document) -> int:
    version = expect(document["format_version"], int, "format_version")
    if version < 1:
        raise Malformed(
            f"format_version is {version}; trace formats are numbered from 1 to {FORMAT_VERSION}"
        )
    return version


def _decode_lane(name: str, entries: Any, source: str, written_as: int) -> Lane:
    kind = kind_named(name.split(".", 1)[0])
    if kind is None:
        known = ", ".join(known_kinds())
        raise TraceError(
            f"{source}: lane {name!r} is of a kind this flowproof does not know "
            f"(known: {known}); upgrade flowproof"
        )
    # A format-1 trace kept its model turns under "turns": name the field the file holds.
    where = "turns" if written_as == 1 and name == MODEL_LANE else f"lanes.{name}"
    items = expect(entries, list, where)
    return Lane(
        name, tuple(kind.decode(entry, f"{where}[{index}]") for index, entry in enumerate(items))
    )


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

"""Trace ⇄ JSON, with a format version and a forward-migration chain.

The file is pretty-printed and each body is stored as its parsed JSON value, so a changed
prompt shows up in review as one changed line. `ensure_ascii=False` keeps non-English prompts
readable in diffs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flowproof.errors import TraceError
from flowproof.trace.model import Trace, Turn

FORMAT_VERSION = 1
"""Bump when the layout changes, and add a `migrate_N_to_N+1` to `_MIGRATIONS`."""

_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def encode(trace: Trace) -> str:
    document = {
        "format_version": FORMAT_VERSION,
        "flowproof_version": trace.flowproof_version,
        "turns": [
            {"dialect": turn.dialect, "request": turn.request, "response": turn.response}
            for turn in trace.turns
        ],
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
        turns = tuple(Turn(t["dialect"], t["request"], t["response"]) for t in document["turns"])
        return Trace(turns=turns, flowproof_version=str(document.get("flowproof_version", "")))
    except (KeyError, TypeError) as exc:
        raise TraceError(f"{source}: malformed trace ({exc!r} missing or wrong)") from None


def migrate(document: dict[str, Any], source: str) -> dict[str, Any]:
    version = document["format_version"]
    if version > FORMAT_VERSION:
        raise TraceError(
            f"{source}: this trace was written by a newer flowproof "
            f"(format {version}); upgrade flowproof"
        )
    while version < FORMAT_VERSION:
        document = _MIGRATIONS[version](document)
        version = document["format_version"]
    return document

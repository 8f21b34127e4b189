"""Older run records, brought forward one format at a time (`flowproof audit` reads old ones).

Format 1 kept some facts only inside sentences (a step's observation after its " — ", a
divergence's path inside its detail line, an error's file at the start of its message). Reading
those sentences back is done here, once, for records written before the facts had fields;
nothing that reads a current record parses text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flowproof.core.lanes import MODEL_LANE
from flowproof.trace.kinds import kind_named

Document = dict[str, Any]

_SPEC_PREFIX = re.compile(r"^(?P<spec>[^\s:]+\.ya?ml)(?::(?P<line>\d+))?:")
_VERDICTS = {"pass": True, "fail": False}


def _migrate_1_to_2(document: Document) -> Document:
    migrated = dict(document)
    migrated["format_version"] = 2
    migrated["errors"] = [_error(str(message)) for message in document.get("errors", [])]
    migrated["flows"] = [_flow(flow) for flow in document.get("flows", [])]
    return migrated


def _flow(flow: Document) -> Document:
    migrated = dict(flow)
    migrated["steps"] = [_step(step, str(flow.get("spec", ""))) for step in flow.get("steps", [])]
    if flow.get("divergence"):
        migrated["divergence"] = _divergence(flow["divergence"])
    migrated["timeline"] = [
        {"lane": "model", **turn, "known": "tool_calls" in turn}
        for turn in flow.get("timeline", [])
    ]
    return migrated


def _step(step: Document, spec: str) -> Document:
    expected, message = str(step.get("step", "")), str(step.get("message", ""))
    head, dash, observed = message.partition(" — ")
    return {
        "step": step.get("number"),
        "file": spec,
        "line": step.get("line"),
        "kind": "strict" if step.get("number") is None else expected.split(" ", 1)[0],
        "passed": _VERDICTS.get(str(step.get("verdict"))),
        "expected": expected,
        "observed": observed if dash and expected in head else message,
        "message": message,
    }


def _divergence(data: Document) -> Document:
    detail = str(data.get("detail", ""))
    path, found, sides = detail.partition(": recorded ")
    recorded, split, replayed = sides.rpartition(", replayed ")
    if not (found and split):
        path = recorded = replayed = ""
    return {
        "lane": "model",
        "index": data.get("request"),
        "recorded_index": data.get("recorded_turn"),
        "envelope": data.get("envelope", []),
        "path": path or None,
        "recorded": recorded or None,
        "replayed": replayed or None,
        "reason": "" if path else detail,
        "headline": str(data.get("text", "")).split("\n", 1)[0],
        "text": data.get("text", ""),
    }


def _error(message: str) -> Document:
    found = _SPEC_PREFIX.match(message)
    line = found["line"] if found else None
    return {
        "spec": found["spec"] if found else None,
        "line": int(line) if line else None,
        "message": message,
    }


def _migrate_2_to_3(document: Document) -> Document:
    """Format 3 gives a tool lane's entries their own rows (an MCP lane's: mcp/kind.py) and
    the trajectory its `executed` calls; each kind rewrites its format-2 rows itself."""
    migrated = dict(document)
    migrated["format_version"] = 3
    migrated["flows"] = [
        {**flow, "timeline": _kind_rows(flow.get("timeline", []), 3)}
        for flow in document.get("flows", [])
    ]
    return migrated


def _kind_rows(timeline: list[Document], to_format: int) -> list[Document]:
    """Each lane kind rewrites its own rows (`<kind>.<name>` lanes; the model's have no dot
    and stay as they are), in place, so the timeline keeps its order."""
    positions: dict[str, list[int]] = {}
    for position, row in enumerate(timeline):
        kind, dot, _ = str(row.get("lane", MODEL_LANE)).partition(".")
        if dot:
            positions.setdefault(kind, []).append(position)
    rows = list(timeline)
    for kind, places in positions.items():
        lane_kind = kind_named(kind)
        if lane_kind is None:
            continue
        migrated = lane_kind.migrate_rows([timeline[place] for place in places], to_format)
        for place, row in zip(places, migrated, strict=True):
            rows[place] = row
    return rows


_IN_TURN = re.compile(r"turn (?P<turn>\d+), request (?P<request>\d+) \(request \d+ of the flow\)")
_SHAPE = re.compile(
    r"conversation shape changed at turn (?P<turn>\d+): "
    r"recorded (?P<recorded>\d+) requests?, replayed (?P<replayed>\d+)"
)
_REMEDY = "remedy: "


def _migrate_3_to_4(document: Document) -> Document:
    """Format 4 stores a divergence whole, so that its headline and text are worded from its
    fields when it is read: the remedy, and in a conversation the user turn, the request's
    place in it and the turn's changed shape, which format 3 kept only in those sentences."""
    migrated = dict(document)
    migrated["format_version"] = 4
    migrated["flows"] = [
        {**flow, "divergence": _whole_divergence(flow["divergence"])}
        if isinstance(flow, dict) and isinstance(flow.get("divergence"), dict)
        else flow
        for flow in document.get("flows", [])
    ]
    return migrated


def _whole_divergence(data: Document) -> Document:
    headline, text = str(data.get("headline", "")), str(data.get("text", ""))
    remedies = [line[len(_REMEDY) :] for line in text.splitlines() if line.startswith(_REMEDY)]
    facts: Document = {"remedy": remedies[-1] if remedies else ""}
    if shape := _SHAPE.match(headline):
        replayed = int(shape["replayed"])
        facts |= {
            "conversation_turn": int(shape["turn"]),
            "turn_request": replayed,
            "shape": [int(shape["recorded"]), replayed],
        }
    elif in_turn := _IN_TURN.match(headline):
        facts |= {
            "conversation_turn": int(in_turn["turn"]),
            "turn_request": int(in_turn["request"]),
        }
    return {**data, **facts}


MIGRATIONS: dict[int, Callable[[Document], Document]] = {
    1: _migrate_1_to_2,
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
}

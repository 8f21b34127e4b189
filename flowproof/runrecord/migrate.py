"""Older run records, brought forward one format at a time (`flowproof audit` reads old ones).

Format 1 kept some facts only inside sentences (a step's observation after its " — ", a
divergence's path inside its detail line, an error's file at the start of its message). Reading
those sentences back is done here, once, for records written before the facts had fields;
nothing that reads a current record parses text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

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
    """Format 3 gives an MCP lane's entries their own rows (server, method, tool, arguments,
    result or error, mocked, anchor) and the trajectory its `executed` calls. A format-2 row
    of an MCP lane was a model-turn row: its message as the one tool call's `arguments`, the
    answer as JSON text; whether it was mocked, and a notification's anchor, were not kept."""
    migrated = dict(document)
    migrated["format_version"] = 3
    migrated["flows"] = [
        {**flow, "timeline": _mcp_rows(flow.get("timeline", []))}
        for flow in document.get("flows", [])
    ]
    return migrated


_MCP_KINDS = {"mcp call": "call", "mcp notification": "notification"}


def _mcp_rows(timeline: list[Document]) -> list[Document]:
    rows, calls = [], 0
    for row in timeline:
        lane = str(row.get("lane", "model"))
        if not lane.startswith("mcp."):
            rows.append(row)
            continue
        kind = _MCP_KINDS.get(str(row.get("dialect")), "server_request")
        shown = row.get("tool_calls") or [{}]
        message = shown[0].get("arguments")
        message = message if isinstance(message, dict) else {}
        params: Any = message.get("params")
        answer = _parsed(row.get("text"))
        is_tool = message.get("method") == "tools/call" and isinstance(params, dict)
        tool = params.get("name") if is_tool else None
        if kind == "call":
            calls += 1
        rows.append(
            {
                "lane": lane,
                "server": lane.removeprefix("mcp."),
                "entry": row.get("turn"),
                "kind": kind,
                "call": calls if kind == "call" else None,
                "method": str(message.get("method", "?")),
                "tool": tool if isinstance(tool, str) else None,
                "arguments": params.get("arguments") if is_tool else params,
                "result": answer.get("result"),
                "error": answer.get("error"),
            }
        )
    return rows


def _parsed(text: Any) -> Document:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {}


MIGRATIONS: dict[int, Callable[[Document], Document]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3}

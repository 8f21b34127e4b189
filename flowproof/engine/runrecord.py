"""The run record: `.flowproof/runs/<id>/report.json`, written atomically by every run and record.

Reports (HTML, PR comment, JUnit) and `flowproof audit` are rendered FROM this file, never from
live objects, so what a reviewer reads is exactly what was recorded. It is versioned like the
trace. It never holds a secret value: declared secrets and the record key are redacted from
the whole document before it is written, and prompts are stored as the spec wrote them (with
`${VAR}` unresolved).
"""

from __future__ import annotations

import json
import secrets as random
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flowproof import __version__
from flowproof.assertions.secrets import KIND as SECRET_KIND
from flowproof.assertions.secrets import redact
from flowproof.dialects import dialect_named
from flowproof.engine.outcome import FlowOutcome, Summary
from flowproof.errors import TraceError
from flowproof.matching.divergence import Divergence
from flowproof.proxy.forward import KEY_VARIABLES
from flowproof.spec.load import LoadedSpec
from flowproof.trace.model import Turn
from flowproof.trace.store import write_text_atomic

FORMAT_VERSION = 1
RUNS_DIR = Path(".flowproof") / "runs"
CONTAINMENT_NOT_ENGAGED = "not engaged"
LANES = {
    "assert_tool_call": "tool_call",
    "assert_no_tool_call": "no_tool_call",
    "assert": "reply",
    SECRET_KIND: "secret_leak",
}


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by time, unique within the second."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%S}Z-{random.token_hex(3)}"


def flow_entry(
    flow: FlowOutcome, loaded: LoadedSpec | None, duration: float | None = None
) -> dict[str, Any]:
    verdicts = {v.step.number: v for v in flow.verdicts if v.step is not None}
    steps = []
    for step in loaded.assertions if loaded else ():
        verdict = verdicts.get(step.ref.number)
        steps.append(
            {
                "number": step.ref.number,
                "line": step.ref.line,
                "step": str(step.assertion),
                "verdict": "not evaluated"
                if verdict is None
                else ("pass" if verdict.passed else "fail"),
                "message": verdict.message if verdict else "",
            }
        )
    steps += [
        {
            "number": None,
            "line": None,
            "step": v.assertion,
            "message": v.message,
            "verdict": "pass" if v.passed else "fail",
        }
        for v in flow.verdicts
        if v.step is None
    ]
    entry: dict[str, Any] = {
        "spec": str(flow.spec_path),
        "name": flow.name,
        "verdict": "pass" if flow.passed else "fail",
        "reasons": list(flow.reasons),
        "prompt": "\n".join(loaded.prompts) if loaded else "",
        "steps": steps,
        "divergence": None if flow.divergence is None else _divergence_entry(flow.divergence),
        "turns": {"served": flow.served, "recorded": flow.recorded},
        "timeline": [_timeline_entry(number, turn) for number, turn in enumerate(flow.turns, 1)],
        "trajectory": None
        if flow.trajectory is None
        else {
            "tool_calls": [
                {"name": c.name, "arguments": c.arguments} for c in flow.trajectory.tool_calls
            ],
            "reply": flow.trajectory.reply,
            "reply_absent_reason": flow.trajectory.reply_absent_reason,
        },
        "warnings": list(flow.warnings),
        "trace": str(flow.trace_written) if flow.trace_written else None,
        "duration": None if duration is None else round(duration, 3),
    }
    if loaded and loaded.spec.control:
        entry["control"] = {
            "id": loaded.spec.control,
            "verdict": entry["verdict"],
            "lanes": sorted({LANES[step.kind] for step in loaded.assertions}),
            "containment": CONTAINMENT_NOT_ENGAGED,
            "evidence": {
                "spec": entry["spec"],
                "turns": entry["turns"],
                "failed_steps": [s["step"] for s in steps if s["verdict"] == "fail"],
            },
        }
    return entry


def _divergence_entry(divergence: Divergence) -> dict[str, Any]:
    difference = divergence.difference
    return {
        "lane": divergence.lane,
        "request": divergence.index,
        "recorded_turn": divergence.recorded_index,
        "envelope": list(divergence.envelope),
        "path": None if difference is None else difference.path,
        "recorded": None if difference is None else difference.recorded,
        "replayed": None if difference is None else difference.replayed,
        "detail": divergence.detail,
        "text": divergence.render(),
    }


def _timeline_entry(number: int, turn: Turn) -> dict[str, Any]:
    dialect = dialect_named(turn.dialect)
    if dialect is None:
        return {"turn": number, "dialect": turn.dialect}
    return {
        "turn": number,
        "dialect": turn.dialect,
        "tool_results": [
            {"tool": name, "content": content}
            for name, content in dialect.latest_tool_results(turn.request)
        ],
        "tool_calls": [
            {"name": name, "arguments": raw} for name, raw in dialect.tool_calls(turn.response)
        ],
        "text": dialect.reply_text(turn.response),
    }


def write_run_record(
    summary: Summary,
    mode: str,
    started: datetime,
    flows: list[dict[str, Any]],
    environ: Mapping[str, str],
    secrets: Mapping[str, str],
    root: Path = RUNS_DIR,
) -> Path:
    run_id = new_run_id(started)
    document = {
        "format_version": FORMAT_VERSION,
        "flowproof_version": __version__,
        "run_id": run_id,
        "mode": mode,
        "started_at": _iso(started),
        "ended_at": _iso(datetime.now(UTC)),
        "exit_code": summary.exit_code,
        "errors": list(summary.errors),
        "flows": flows,
    }
    hidden = dict(secrets)
    hidden.update({name: environ[name] for name in KEY_VARIABLES if environ.get(name)})
    text = redact(json.dumps(document, indent=2, ensure_ascii=False), _json_escaped(hidden)) + "\n"
    path = root / run_id / "report.json"
    write_text_atomic(path, text)
    return path


def _json_escaped(secrets: Mapping[str, str]) -> dict[str, str]:
    """Secret values as they appear inside a JSON document (quotes and backslashes escaped)."""
    return {name: json.dumps(value, ensure_ascii=False)[1:-1] for name, value in secrets.items()}


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def load_run_record(path: Path) -> dict[str, Any]:
    """A run record by its report.json or its directory, checked for a format we can read."""
    if path.is_dir():
        path = path / "report.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TraceError(f"{path}: not a readable run record ({exc})") from None
    version = document.get("format_version") if isinstance(document, dict) else None
    if not isinstance(version, int):
        raise TraceError(f"{path}: not a flowproof run record (no format_version)")
    if version > FORMAT_VERSION:
        raise TraceError(
            f"{path}: written by a newer flowproof (format {version}); upgrade flowproof"
        )
    return dict(document)


def latest_run(root: Path = RUNS_DIR) -> Path:
    runs = sorted(p for p in root.glob("*/report.json")) if root.is_dir() else []
    if not runs:
        raise TraceError(f"no run records under {root}; run `flowproof run` first")
    return runs[-1]

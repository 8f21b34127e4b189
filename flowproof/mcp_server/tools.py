"""The tools `flowproof mcp` offers, as plain functions from arguments to JSON-ready dicts.

They know nothing of the MCP SDK (server.py registers them), so they are the same whichever
client calls. Every answer is data: a failed flow, a spec that cannot run, a trace that cannot
be read or a record that is not set up come back as a result with an `error` (or a flow with
`verdict: "fail"`), never as a protocol error, so the calling agent can read what to fix.

A flow's answer is its run record, the document `flowproof run --json` prints: `run_specs`
answers with the run record of the specs it ran, `record_spec` with the flow's entry in it.
Flows run in this process through the same front door as `flowproof run` (engine/front.py), one
at a time (a lock: flows may need a fixed port, and a coding agent may call tools
concurrently); each starts its agent as a subprocess, as `flowproof run` does. Every answer
passes through the redactor before it leaves: no record key or declared secret reaches the
client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import wraps
from typing import Any

from flowproof.core.errors import FlowproofError, SpecError
from flowproof.guards.redaction import REDACT
from flowproof.host.environ import own_environ

Result = dict[str, Any]

_FLOWS = asyncio.Lock()
"""One flow (or doctor run) at a time in this server."""


def error(kind: str, message: str, **where: Any) -> Result:
    return {"error": {"kind": kind, "message": message, **where}}


def problem(exc: BaseException) -> Result:
    """An exception as a result: flowproof's own errors by kind (a bad spec, an unreadable
    trace, an unset variable), anything else as an internal error of flowproof."""
    if isinstance(exc, SpecError):
        return error("SpecError", str(exc), spec=str(exc.path), line=exc.line)
    if isinstance(exc, FlowproofError):
        return error(type(exc).__name__, str(exc))
    return error("internal", f"{type(exc).__name__}: {exc}")


def redacted(result: Result) -> Result:
    """The result with every record key and declared secret hidden (an agent may echo one
    into a reply, a reason or its stderr)."""
    return dict(json.loads(REDACT(json.dumps(result, ensure_ascii=False))))


def as_data(
    tool: Callable[..., Awaitable[Result]],
) -> Callable[..., Awaitable[Result]]:
    """Failures become results, and every result is redacted."""

    @wraps(tool)
    async def wrapped(*args: Any, **kwargs: Any) -> Result:
        try:
            result = await tool(*args, **kwargs)
        except Exception as exc:
            result = problem(exc)
        return redacted(result)

    return wrapped


@as_data
async def list_specs(paths: Sequence[str] = ("specs",)) -> Result:
    from flowproof.doors.api import find_specs
    from flowproof.spec.load import load_spec
    from flowproof.trace.store import trace_path_for

    specs = []
    for path in find_specs(paths):
        trace = trace_path_for(path)
        entry: Result = {"spec": str(path), "trace": str(trace), "recorded": trace.is_file()}
        try:
            entry["name"] = load_spec(path).spec.name
        except FlowproofError as exc:
            entry |= problem(exc)
        specs.append(entry)
    return {"specs": specs}


@as_data
async def run_specs(paths: Sequence[str] = ("specs",)) -> Result:
    """The specs replayed as `flowproof run PATHS` replays them, into one run record: the
    answer is that record as written (what `flowproof run --json` prints), with its path.
    Its `exit_code` is the one `flowproof run` would give the same specs."""
    from flowproof.doors.api import find_specs
    from flowproof.engine.front import RunOptions, run_spec
    from flowproof.engine.outcome import ConfigProblem, Mode, Summary
    from flowproof.engine.runrecord import run_record
    from flowproof.runrecord.store import load_run_record, new_run_id, runs_dir, write_run_record

    begun = datetime.now(UTC)
    summary = Summary()
    for path in find_specs(paths):
        try:
            async with _FLOWS:
                run = await run_spec(path, RunOptions(Mode.REPLAY))
        except FlowproofError as exc:
            summary.errors.append(ConfigProblem.from_error(exc, path))
            continue
        summary.flows.append(run.record)
    mode = Mode.REPLAY.value
    record = run_record(
        new_run_id(begun), mode, begun, summary.exit_code, summary.flows, summary.errors
    )
    written = write_run_record(record, runs_dir(None, own_environ()), REDACT)
    return {"run_record": str(written), **load_run_record(written).model_dump(mode="json")}


def record_not_set_up(environ: Mapping[str, str]) -> str | None:
    """Why record cannot forward from this server's environment, by variable names alone;
    None when an upstream and a key are both set."""
    from flowproof.guards.redaction import RECORD_KEY_VARIABLES
    from flowproof.proxy.forward import BASE_VARIABLES, OVERRIDE_VARIABLE, Upstream

    upstream = Upstream.from_environ(environ)
    missing = []
    if not upstream.override and not upstream.bases:
        missing.append(
            f"no upstream: set {OVERRIDE_VARIABLE} (the model API's base URL, with /v1, e.g. "
            f"https://api.openai.com/v1) or one of {', '.join(BASE_VARIABLES)}"
        )
    if not upstream.keys:
        missing.append(f"no key: set one of {', '.join(RECORD_KEY_VARIABLES)}")
    if not missing:
        return None
    return (
        "record_spec needs an upstream and a key in the flowproof mcp server's own "
        "environment (record forwards the agent's model calls to the real model with that "
        f"key; the agent under test never sees it). Missing: {'; '.join(missing)}. Set them "
        "in the environment the server is started with (the `env` of its entry in your MCP "
        "client's config) and restart the server."
    )


@as_data
async def record_spec(path: str, keep_matching: bool = False) -> Result:
    from flowproof.doors.api import Flow

    refused = record_not_set_up(own_environ())
    if refused is not None:
        return {"recorded": False, **error("record_not_set_up", refused, spec=path)}
    async with _FLOWS:
        result = await Flow(path).record_async(keep_matching=keep_matching)
    return {"recorded": result.trace is not None, "flow": result.to_dict()}


@as_data
async def show_trajectory(trace: str) -> Result:
    from flowproof.doors.api import show_trace

    return show_trace(trace).to_dict()


@as_data
async def diff_traces(old: str, new: str) -> Result:
    from flowproof.doors.api import diff_traces as changes_between

    changes = changes_between(old, new)
    return {"old": old, "new": new, "changed": bool(changes), "changes": list(changes)}


@as_data
async def doctor(
    command: str,
    prompt: str | None = None,
    timeout: float | None = None,
    mcp: Sequence[str] = (),
    mcp_url: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Result:
    """The document `flowproof doctor --json` prints for the same arguments; a refused
    argument, the error document it prints then (kind `usage`, exit code 2)."""
    from flowproof.containment.probe import capability
    from flowproof.documents.doctor import doctor_document
    from flowproof.documents.error import error_document
    from flowproof.engine.doctor import (
        DEFAULT_PROMPT,
        DEFAULT_TIMEOUT,
        DoctorArgumentError,
        run_doctor,
    )

    try:
        async with _FLOWS:
            report = await run_doctor(
                command,
                prompt or DEFAULT_PROMPT,
                timeout or DEFAULT_TIMEOUT,
                tuple(mcp),
                tuple(mcp_url),
                dict(env or {}),
            )
    except DoctorArgumentError as refused:
        return error_document("usage", refused, refused.exit_code)
    return doctor_document(report, capability())

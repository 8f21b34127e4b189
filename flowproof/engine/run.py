"""run_flow: one flow, top to bottom.

    spec (loaded) → trace (replay) → proxy on 127.0.0.1 → agent (or service) under a time bound
    → flowproof's own record of the traffic → boundary reasons → assertions → trace (record)

Record differs in three places: the forward backend replaces the replay backend, zero requests
is a failure rather than an empty trace, and a trace is written only when everything passed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from flowproof import __version__
from flowproof.assertions.evaluate import Verdict
from flowproof.assertions.secrets import Body, redact
from flowproof.dialects import dialect_named
from flowproof.dialects.base import ToolMock
from flowproof.engine import warnings as boundary_warnings
from flowproof.engine.drive import drive
from flowproof.engine.judge import declared_secrets, judge
from flowproof.engine.outcome import FlowOutcome, Mode
from flowproof.engine.reasons import boundary_reasons
from flowproof.engine.trajectory import build_trajectory
from flowproof.errors import TraceError
from flowproof.proxy.app import make_app, serve
from flowproof.proxy.forward import KEY_VARIABLES, ForwardBackend, Upstream
from flowproof.proxy.replay import ReplayBackend
from flowproof.proxy.traffic import Traffic
from flowproof.spec.load import LoadedSpec
from flowproof.spec.suite import Suite
from flowproof.trace.model import Trace, Turn
from flowproof.trace.store import load_trace, trace_path_for, write_trace


async def run_flow(
    loaded: LoadedSpec,
    mode: Mode,
    environ: Mapping[str, str] | None = None,
    suite: Suite | None = None,
) -> FlowOutcome:
    environ = dict(os.environ if environ is None else environ)
    spec = loaded.spec
    trace_path = trace_path_for(loaded.path)
    credentials = {name: environ[name] for name in KEY_VARIABLES if environ.get(name)}
    previous = _previous_trace(trace_path, mode, credentials)
    if mode is Mode.REPLAY and previous is None:
        return _failed(
            loaded, mode, f"no trace at {trace_path}; run `flowproof record {loaded.path}` first"
        )

    secret_values = declared_secrets(loaded, environ)
    traffic = Traffic()
    mocks = {tool.name: _mock(tool.result, tool.results) for tool in spec.tools if tool.is_mocked}
    backend = (
        ReplayBackend(previous, mocks, traffic)
        if mode is Mode.REPLAY and previous
        else ForwardBackend(Upstream.from_environ(environ), mocks, traffic)
    )
    try:
        runner, port = await serve(make_app(backend, traffic), spec.agent.proxy_port or 0)
    except OSError as exc:
        return _failed(
            loaded,
            mode,
            f"proxy_port {spec.agent.proxy_port} is busy: flowproof "
            f"could not listen on 127.0.0.1:{spec.agent.proxy_port} "
            f"({exc.strerror})",
        )
    try:
        driven = await drive(loaded, suite, environ, port, traffic.fatal)
    finally:
        await runner.cleanup()
        if isinstance(backend, ForwardBackend):
            await backend.close()
    if driven.outcome is None:
        return _failed(loaded, mode, driven.before_each_failure)

    recorded = len(previous.turns) if mode is Mode.REPLAY and previous else 0
    reasons = boundary_reasons(mode, traffic, driven.outcome, recorded, spec.agent.timeout, port)
    trajectory = build_trajectory(traffic.turns)
    verdicts: tuple[Verdict, ...] = ()
    if not reasons:
        # After a boundary failure the trajectory is cut short; judging it would only report
        # the same failure again as a cascade of missing calls.
        verdicts = judge(loaded, trajectory, _bodies(traffic.turns), environ, secret_values)
        reasons = [verdict.message for verdict in verdicts if not verdict.passed]
    written, replaced = None, None
    if mode is Mode.RECORD and not reasons:
        # The secret scan above ran before this write: a leak never mints a trace.
        never_stored = [*secret_values.values(), *credentials.values()]
        write_trace(trace_path, Trace(tuple(traffic.turns), __version__), secrets=never_stored)
        written, replaced = trace_path, previous
    return FlowOutcome(
        spec_path=loaded.path,
        name=spec.name,
        mode=mode,
        reasons=tuple(redact(reason, secret_values) for reason in reasons),
        verdicts=verdicts,
        served=len(traffic.turns),
        recorded=recorded,
        trajectory=trajectory,
        divergence=traffic.divergence,
        agent=driven.outcome,
        trace_written=written,
        previous_trace=replaced,
        warnings=tuple(boundary_warnings.uncovered_tools(loaded)),
        secrets=secret_values,
        turns=tuple(traffic.turns),
    )


def _previous_trace(path: Path, mode: Mode, credentials: Mapping[str, str]) -> Trace | None:
    """The trace already beside the spec. At replay an unreadable one is an error (exit 2); a
    record may replace it, so there it only counts as absent."""
    if not path.exists():
        return None
    if mode is Mode.REPLAY:
        return _load_checked(path, credentials)
    try:
        return _load_checked(path, credentials)
    except TraceError:
        return None


def _load_checked(path: Path, credentials: Mapping[str, str]) -> Trace:
    trace = load_trace(path, credentials=credentials)
    for number, turn in enumerate(trace.turns, 1):
        if dialect_named(turn.dialect) is None:
            raise TraceError(f"{path}: turn {number} has unknown dialect {turn.dialect!r}")
    return trace


def _bodies(turns: Sequence[Turn]) -> list[Body]:
    """Every body that crossed the model boundary, labelled for secret-leak messages."""
    return [
        Body(f"turn {number} {part}", value)
        for number, turn in enumerate(turns, 1)
        for part, value in (("request", turn.request), ("response", turn.response))
    ]


def _mock(result: object, results: list[object] | None) -> ToolMock:
    if results is not None:
        return ToolMock(tuple(results), repeat=False)
    return ToolMock((result,), repeat=True)


def _failed(loaded: LoadedSpec, mode: Mode, reason: str) -> FlowOutcome:
    return FlowOutcome(spec_path=loaded.path, name=loaded.spec.name, mode=mode, reasons=(reason,))

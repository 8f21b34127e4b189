"""run_flow: one flow, top to bottom.

    spec (loaded) → trace (replay) → proxy on 127.0.0.1 → agent under a time bound
    → flowproof's own record of the traffic → boundary reasons → assertions → trace (record)

Record differs in three places: the forward backend replaces the replay backend, zero requests
is a failure rather than an empty trace, and a trace is written only when everything passed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from flowproof import __version__
from flowproof.assertions.evaluate import evaluate
from flowproof.dialects import dialect_named
from flowproof.dialects.base import ToolMock
from flowproof.drivers.command import AgentOutcome, run_command
from flowproof.drivers.env import WITH_V1, WITHOUT_V1, agent_environment, proxy_handles
from flowproof.engine import warnings as boundary_warnings
from flowproof.engine.outcome import FlowOutcome, Mode
from flowproof.engine.trajectory import build_trajectory
from flowproof.errors import TraceError
from flowproof.proxy.app import make_app, serve
from flowproof.proxy.forward import KEY_VARIABLES, ForwardBackend, Upstream
from flowproof.proxy.replay import ReplayBackend
from flowproof.proxy.traffic import Traffic
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve
from flowproof.trace.model import Trace
from flowproof.trace.store import load_trace, trace_path_for, write_trace


async def run_flow(
    loaded: LoadedSpec, mode: Mode, environ: Mapping[str, str] | None = None
) -> FlowOutcome:
    environ = dict(os.environ if environ is None else environ)
    spec = loaded.spec
    trace_path = trace_path_for(loaded.path)
    trace = None
    if mode is Mode.REPLAY:
        if not trace_path.exists():
            return _failed(
                loaded,
                mode,
                f"no trace at {trace_path}; run `flowproof record {loaded.path}` first",
            )
        trace = _load_checked(trace_path)
    mocks = {tool.name: _mock(tool.result, tool.results) for tool in spec.tools if tool.is_mocked}
    # Resolve every ${VAR} before anything starts: an unset variable is a ConfigError (exit 2).
    prompt = resolve("\n".join(loaded.prompts), environ)

    traffic = Traffic()
    upstream = Upstream.from_environ(environ)
    backend = (
        ReplayBackend(trace, mocks, traffic)
        if trace is not None
        else ForwardBackend(upstream, mocks, traffic)
    )
    runner, port = await serve(make_app(backend, traffic))
    try:
        handles = proxy_handles(port)
        command = resolve(spec.agent.command, environ, handles)
        env = agent_environment(environ, handles, prompt, spec.agent.env)
        agent = await run_command(command, env, spec.agent.timeout, traffic.fatal)
    finally:
        await runner.cleanup()
        if isinstance(backend, ForwardBackend):
            await backend.close()

    recorded = len(trace.turns) if trace is not None else 0
    reasons = _boundary_reasons(mode, traffic, agent, recorded, spec.agent.timeout)
    trajectory = build_trajectory(traffic.turns)
    verdicts: tuple = ()
    if not reasons:
        # After a boundary failure the trajectory is cut short; judging it would only report
        # the same failure again as a cascade of missing calls.
        verdicts = tuple(
            evaluate(
                [(s.ref, s.assertion) for s in loaded.assertions],
                trajectory,
                strict=spec.strict,
                resolve=lambda text: resolve(text, environ),
            )
        )
        reasons = [v.message for v in verdicts if not v.passed]
    written = None
    if mode is Mode.RECORD and not reasons:
        secrets = [environ[name] for name in KEY_VARIABLES if environ.get(name)]
        write_trace(trace_path, Trace(tuple(traffic.turns), __version__), secrets=secrets)
        written = trace_path
    return FlowOutcome(
        spec_path=loaded.path,
        name=spec.name,
        mode=mode,
        reasons=tuple(reasons),
        verdicts=verdicts,
        served=len(traffic.turns),
        recorded=recorded,
        trajectory=trajectory,
        divergence=traffic.divergence,
        agent=agent,
        trace_written=written,
        warnings=tuple(boundary_warnings.uncovered_tools(loaded)),
    )


def _boundary_reasons(
    mode: Mode, traffic: Traffic, agent: AgentOutcome, recorded: int, timeout: float
) -> list[str]:
    """Failures seen at the model boundary or in the process, most fundamental first."""
    reasons: list[str] = []
    if traffic.divergence is not None:
        reasons.append(traffic.divergence.render())
    reasons.extend(traffic.failures)
    if agent.timed_out:
        reasons.append(
            f"the agent was still running after its timeout of {timeout:g}s; "
            f"flowproof stopped it and every process it started"
        )
    if not traffic.requests:
        reasons.append(_no_requests(agent))
    elif agent.exit_code not in (0, None) and not reasons:
        reasons.append(
            f"the agent exited with code {agent.exit_code}"
            + _tail("its stderr ended with", agent.stderr_tail)
        )
    if mode is Mode.REPLAY and not reasons and len(traffic.turns) < recorded:
        reasons.append(
            f"served {len(traffic.turns)} of {recorded} recorded turns: the agent "
            f"finished without asking for the rest"
        )
    return reasons


def _no_requests(agent: AgentOutcome) -> str:
    if agent.exit_code not in (0, None):
        return (
            f"the agent exited with code {agent.exit_code} before making any model request"
            + _tail("its stderr ended with", agent.stderr_tail)
        )
    variables = ", ".join((*WITH_V1, *WITHOUT_V1))
    return (
        "the agent made no model requests to flowproof's proxy, so nothing was recorded or "
        "served. Its model client most likely does not read the base URL flowproof injects "
        f"({variables}); point it at ${{flowproof.proxy_url}} (includes /v1) or "
        "${flowproof.proxy_url_no_v1} in agent.env"
    )


def _tail(label: str, text: str) -> str:
    return f"; {label}:\n{_indent(text)}" if text.strip() else " and printed nothing on stderr"


def _indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())


def _load_checked(path: Path) -> Trace:
    trace = load_trace(path)
    for number, turn in enumerate(trace.turns, 1):
        if dialect_named(turn.dialect) is None:
            raise TraceError(f"{path}: turn {number} has unknown dialect {turn.dialect!r}")
    return trace


def _mock(result: object, results: list | None) -> ToolMock:
    if results is not None:
        return ToolMock(tuple(results), repeat=False)
    return ToolMock((result,), repeat=True)


def _failed(loaded: LoadedSpec, mode: Mode, reason: str) -> FlowOutcome:
    return FlowOutcome(spec_path=loaded.path, name=loaded.spec.name, mode=mode, reasons=(reason,))

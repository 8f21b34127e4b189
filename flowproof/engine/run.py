"""run_flow: one flow, top to bottom.

    strategy (record or replay) → proxy on 127.0.0.1 → agent (or service) under a time bound
    → flowproof's own record of the traffic → boundary reasons → assertions → strategy.finish

Record and replay differ only inside their strategy (engine/strategy.py): the backend the proxy
answers from, how many turns the flow must serve, and whether a passing flow mints a trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from flowproof.assertions.evaluate import Verdict
from flowproof.drivers.env import inherited_environment
from flowproof.engine import lanes
from flowproof.engine import warnings as boundary_warnings
from flowproof.engine.context import FlowContext
from flowproof.engine.drive import DriveResult, drive
from flowproof.engine.environment import home_facts, request_rules
from flowproof.engine.judge import judge
from flowproof.engine.outcome import FlowOutcome, Secrets
from flowproof.engine.reasons import boundary_reasons
from flowproof.engine.strategy import Strategy
from flowproof.guards.capability import REDACTED_AS
from flowproof.guards.redaction import Redactor
from flowproof.live.conversation import Conversation
from flowproof.live.traffic import Traffic
from flowproof.mcp.boundary import McpBoundary, mcp_boundary
from flowproof.proxy.app import make_app, serve
from flowproof.spec.load import LoadedSpec
from flowproof.spec.mocks import mocks_for
from flowproof.spec.refs import resolve

if TYPE_CHECKING:
    from flowproof.proxy.http import Server
    from flowproof.trace.lint import Rules


AgentDriver = Callable[[FlowContext, int, asyncio.Event, McpBoundary], Awaitable[DriveResult]]
"""What runs the agent once the boundaries are up, given the flow's context, the proxy's port,
the event that asks it to stop and the tool boundary: `drive` (a command or a `url:` service),
the pytest plugin's in-process driver (doors/inprocess.py), or doctor's (engine/doctor.py).
Each wires the agent with drivers/env.wire_agent."""


async def run_flow(
    context: FlowContext, strategy: Strategy, agent: AgentDriver | None = None
) -> FlowOutcome:
    loaded, suite, environ = context.loaded, context.suite, context.environ
    spec = loaded.spec
    # `normalize:` and `ignore_fields:`, with today's facts measured as the flow starts; a
    # replay normalises by default only what its trace was normalised with.
    rules = request_rules(loaded, suite, environ, recorded_defaults=strategy.recorded_defaults)
    if (problem := strategy.cannot_start()) is not None:
        return _failed(loaded, strategy, problem)
    secret_values = context.secrets  # an unset declared secret fails here, after the above
    traffic = Traffic()
    if loaded.conversation:
        texts = tuple(resolve(turn.text, environ) for turn in loaded.conversation)
        # A command agent's turn is complete at the model's reply; a service's, at its answer.
        traffic.conversation = Conversation(texts, by_reply=spec.agent.url is None)
    capability = context.capability
    runner: Server | None = None
    try:
        async with (
            strategy.backend(traffic, mocks_for(loaded), rules) as backend,
            mcp_boundary(
                spec.mcp,
                traffic,
                strategy.tool_side(environ, inherited_environment(environ)),
                capability,
            ) as tool_boundary,
        ):
            try:
                app = make_app(backend, traffic, capability)
                runner, port = await serve(
                    app, spec.agent.proxy_port or 0, traffic=traffic, capability=capability
                )
            except OSError as exc:
                return _failed(loaded, strategy, _busy(spec.agent.proxy_port, exc))
            if agent is None:
                driven = await drive(
                    context, port, traffic.fatal, tool_boundary, traffic.conversation
                )
            else:
                driven = await agent(context, port, traffic.fatal, tool_boundary)
    finally:
        # After the backend has closed, not before: closing it cancels the upstream calls
        # still in flight (an agent stopped mid-call, an interrupt), which the proxy would
        # otherwise wait out, for as long as the upstream takes, before it stops.
        if runner is not None:
            await runner.cleanup()
    if driven.outcome is None:
        return _failed(loaded, strategy, driven.before_each_failure)

    expected = strategy.expected_turns
    reasons = boundary_reasons(traffic, driven.outcome, expected, spec.agent.timeout, port)
    reasons += strategy.tool_boundary_reasons(tool_boundary, reasons)
    served = traffic.snapshot()
    trajectory = lanes.trajectory(served)
    verdicts: tuple[Verdict, ...] = ()
    if not reasons:
        # After a boundary failure the trajectory is cut short; judging it would only report
        # the same failure again as a cascade of missing calls.
        bodies = lanes.all_bodies(served)
        egress = driven.egress.evidence() if driven.egress else None
        scopes = lanes.turn_scopes(served) if loaded.conversation else None
        verdicts = judge(context, trajectory, bodies, egress, scopes)
        reasons = [verdict.message for verdict in verdicts if not verdict.passed]
    if not reasons:  # the store guard: what must never be committed fails the record
        # The capability is as good as dead once the flow ends, but a trace is committed
        # evidence: an agent that told the model its base URL has its trace refused.
        never_in_a_trace = {**secret_values, REDACTED_AS: capability.token}

        def lint_rules() -> Rules:  # asked for only by a strategy that writes a trace
            from flowproof.trace.lint import rules_for

            home = home_facts(loaded, suite, environ, rules)
            return rules_for(suite.settings if suite else None, never_in_a_trace, home)

        reasons = strategy.trace_findings(traffic, lint_rules)
    written = strategy.finish(traffic, not reasons, context.never_stored, rules.normalizer.defaults)
    return FlowOutcome(
        spec_path=loaded.path,
        name=spec.name,
        mode=strategy.mode,
        reasons=tuple(map(Redactor({**secret_values, REDACTED_AS: capability.token}), reasons)),
        verdicts=verdicts,
        served=len(traffic.turns),
        recorded=expected or 0,
        trajectory=trajectory,
        divergence=traffic.divergence,
        agent=driven.outcome,
        trace_written=written,
        previous_trace=strategy.previous if written else None,
        warnings=tuple(boundary_warnings.uncovered_tools(loaded))
        + tuple(driven.egress.warnings() if driven.egress else ()),
        notes=tuple(traffic.notes),
        secrets=Secrets(secret_values),
        lanes=served,
        kept_turns=tuple(sorted(traffic.kept)),
        egress=driven.egress.summary() if driven.egress else None,
        normalized=rules.normalized,
        ignored_fields=rules.ignored_fields,
        outsiders=len(traffic.outsiders),
    )


def _busy(port: int | None, exc: OSError) -> str:
    return (
        f"proxy_port {port} is busy: flowproof could not listen on 127.0.0.1:{port} "
        f"({exc.strerror})"
    )


def _failed(loaded: LoadedSpec, strategy: Strategy, reason: str) -> FlowOutcome:
    return FlowOutcome(
        spec_path=loaded.path, name=loaded.spec.name, mode=strategy.mode, reasons=(reason,)
    )

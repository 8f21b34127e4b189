"""Start (or trigger) the agent for one flow, with the suite's before_each first."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flowproof.drivers.command import AgentOutcome, run_command
from flowproof.drivers.env import AgentWiring, wire_agent
from flowproof.drivers.launch import PLAIN, Launcher
from flowproof.drivers.url import (
    TriggerOutcome,
    converse,
    new_conversation_id,
    trigger_url,
    turn_body,
)
from flowproof.engine.context import FlowContext
from flowproof.engine.egress import engages_egress, flow_egress
from flowproof.live.conversation import Conversation
from flowproof.mcp.boundary import McpBoundary
from flowproof.spec.refs import resolve

if TYPE_CHECKING:  # loaded by a flow that engages containment: most do not
    from flowproof.containment.engage import EgressSession

Driven = AgentOutcome | TriggerOutcome


@dataclass(frozen=True, slots=True)
class DriveResult:
    outcome: Driven | None
    """None when the agent was never started (before_each failed)."""
    before_each_failure: str = ""
    egress: EgressSession | None = None
    """The flow's containment; None when it engages none."""


async def drive(
    context: FlowContext,
    port: int,
    stop: asyncio.Event,
    tool_boundary: McpBoundary,
    conversation: Conversation | None = None,
) -> DriveResult:
    """`conversation`: a `conversation:` flow's user turns, the later ones handed to the agent
    on its stdin as each begins."""
    loaded, suite, environ = context.loaded, context.suite, context.environ
    agent = loaded.spec.agent
    egress = None
    if engages_egress(loaded):  # most flows do not, and need no thread to say so
        egress = await asyncio.to_thread(flow_egress, loaded, environ)  # may probe the kernel
    wiring = agent_wiring(context, port, tool_boundary)
    handles, env = wiring.handles, wiring.environment
    prompt = wiring.prompt
    if suite and suite.settings.before_each:
        failure = await _before_each(suite.settings.before_each, env, agent.timeout, stop)
        if failure:
            return DriveResult(None, failure)
    if agent.url is not None:
        url = resolve(agent.url, environ, handles)
        headers = {name: resolve(value, environ) for name, value in agent.headers.items()}
        if conversation is not None:
            triggered = await converse(url, conversation, headers, agent.timeout, stop, agent.body)
        else:
            sent = None
            if agent.body is not None:  # (a single turn's id: minted, as a conversation's is)
                sent = turn_body(agent.body, prompt, new_conversation_id(), 1)
            triggered = await trigger_url(url, prompt, headers, agent.timeout, stop, sent)
        return DriveResult(triggered, egress=egress)
    assert agent.command is not None  # the spec model guarantees one driver
    command = resolve(agent.command, environ, handles)
    launcher = await _launcher(egress, environ)
    cwd = context.cwd
    outcome = await run_command(
        command,
        env,
        agent.timeout,
        stop,
        launcher,
        cwd=None if cwd is None else str(cwd),
        later_turns=conversation.later_turns() if conversation is not None else None,
    )
    return DriveResult(outcome, egress=egress)


def agent_wiring(context: FlowContext, port: int, tool_boundary: McpBoundary) -> AgentWiring:
    """A flow's agent environment: its prompt, then the suite's `env:` and `agent.env`."""
    loaded, suite = context.loaded, context.suite
    prompt = resolve("\n".join(loaded.prompts), context.environ)  # a conversation's first turn
    spec_env = {**(suite.settings.env if suite else {}), **loaded.spec.agent.env}
    return wire_agent(context.environ, port, context.capability, tool_boundary, prompt, spec_env)


async def _launcher(egress: EgressSession | None, environ: Mapping[str, str]) -> Launcher:
    if egress is None or not egress.contained or egress.policy is None:
        return PLAIN
    from flowproof.containment.pins import PinnedPolicy
    from flowproof.containment.session import Supervision
    from flowproof.drivers.launch import SeccompLauncher

    # Declared host names are resolved now, before the agent starts, and pinned.
    pinned = await asyncio.to_thread(PinnedPolicy, egress.policy)
    egress.unresolved = pinned.unresolved()
    return SeccompLauncher(Supervision(pinned, egress.findings, environ))


async def _before_each(
    command: str, env: Mapping[str, str], timeout: float, stop: asyncio.Event
) -> str:
    outcome = await run_command(command, env, timeout, stop)
    if outcome.exit_code == 0:
        return ""
    how = "timed out" if outcome.timed_out else f"exited with code {outcome.exit_code}"
    output = "\n".join(filter(None, (outcome.stdout_tail, outcome.stderr_tail)))
    shown = "\n".join(f"  | {line}" for line in output.splitlines())
    return f"before_each `{command}` {how}, so the flow did not run" + (
        f"; its output ended with:\n{shown}" if shown else " and printed nothing"
    )

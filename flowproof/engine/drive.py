"""Start (or trigger) the agent for one flow, with the suite's before_each first."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from flowproof.drivers.command import AgentOutcome, run_command
from flowproof.drivers.env import agent_environment, proxy_handles
from flowproof.drivers.url import TriggerOutcome, trigger_url
from flowproof.engine.workdir import agent_cwd
from flowproof.mcp.boundary import McpBoundary
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve
from flowproof.spec.suite import Suite

Driven = AgentOutcome | TriggerOutcome


@dataclass(frozen=True, slots=True)
class DriveResult:
    outcome: Driven | None
    """None when the agent was never started (before_each failed)."""
    before_each_failure: str = ""


async def drive(
    loaded: LoadedSpec,
    suite: Suite | None,
    environ: Mapping[str, str],
    port: int,
    stop: asyncio.Event,
    tool_boundary: McpBoundary | None = None,
) -> DriveResult:
    """`tool_boundary` adds the MCP stand-ins' handles and variables to what is injected."""
    agent = loaded.spec.agent
    handles = proxy_handles(port)
    injected = {}
    if tool_boundary is not None:
        handles.update(tool_boundary.handles())
        injected = tool_boundary.environment()
    prompt = resolve("\n".join(loaded.prompts), environ)
    suite_env = suite.settings.env if suite else {}
    env = agent_environment(environ, handles, prompt, {**suite_env, **agent.env}, injected)
    if suite and suite.settings.before_each:
        failure = await _before_each(suite.settings.before_each, env, agent.timeout, stop)
        if failure:
            return DriveResult(None, failure)
    if agent.url is not None:
        url = resolve(agent.url, environ, handles)
        headers = {name: resolve(value, environ) for name, value in agent.headers.items()}
        return DriveResult(await trigger_url(url, prompt, headers, agent.timeout, stop))
    assert agent.command is not None  # the spec model guarantees one driver
    command = resolve(agent.command, environ, handles)
    cwd = agent_cwd(loaded, environ)
    outcome = await run_command(
        command, env, agent.timeout, stop, cwd=None if cwd is None else str(cwd)
    )
    return DriveResult(outcome)


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

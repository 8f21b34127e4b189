"""`flowproof doctor`: does this agent's model traffic reach the proxy at all?

It reports what ARRIVED, not that the wiring is correct: an agent with two clients can reach
the proxy with one and a real provider with the other. `record` is what settles that.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass

from flowproof.drivers.command import AgentOutcome, run_command
from flowproof.drivers.env import WITH_V1, WITHOUT_V1, agent_environment, proxy_handles
from flowproof.proxy.app import make_app, serve
from flowproof.proxy.canned import CannedBackend
from flowproof.proxy.traffic import Traffic

DEFAULT_PROMPT = "Say hello."
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class DoctorReport:
    requests: tuple[tuple[str, str], ...]
    """(path, dialect or '?') of every request that arrived."""
    agent: AgentOutcome
    port: int

    @property
    def arrived(self) -> int:
        return len(self.requests)

    def render(self) -> str:
        lines = [
            f"{self.arrived} model request{'s' * (self.arrived != 1)} arrived at "
            f"flowproof's proxy (127.0.0.1:{self.port})."
        ]
        for (path, dialect), count in Counter(self.requests).items():
            served = dialect if dialect != "?" else "not a model API flowproof serves (404)"
            lines.append(f"  {count} × POST {path}  →  {served}")
        lines.append(self._agent_line())
        if self.arrived == 0:
            lines += _zero_hint()
        else:
            lines.append(
                "This shows the client honours the injected base URL. It does not show "
                "that every model call goes through it; `flowproof record` settles that."
            )
        return "\n".join(lines)

    def _agent_line(self) -> str:
        agent = self.agent
        if agent.timed_out:
            return (
                "The agent was still running at the timeout and was stopped (doctor cannot "
                "tell a hang from a slow agent)."
            )
        line = f"The agent exited with code {agent.exit_code}."
        if agent.exit_code and agent.stderr_tail.strip():
            line += " Its stderr ended with:\n" + "\n".join(
                f"  | {text}" for text in agent.stderr_tail.splitlines()
            )
        return line


def _zero_hint() -> list[str]:
    return [
        "Zero means the agent's model client did not use the base URL flowproof injects:",
        f"  {', '.join(WITH_V1)} = http://127.0.0.1:<port>/v1",
        f"  {', '.join(WITHOUT_V1)} = http://127.0.0.1:<port>",
        "If your client reads another variable (or a config file), map it in the spec's "
        "agent.env with a handle:",
        '  MY_CLIENT_BASE_URL: "${flowproof.proxy_url}"        # includes /v1',
        '  MY_OTHER_BASE_URL: "${flowproof.proxy_url_no_v1}"   # the client appends /v1',
        "If the agent answered without calling a model at all, try --prompt with a task that "
        "needs one.",
    ]


async def run_doctor(command: str, prompt: str, timeout: float) -> DoctorReport:
    traffic = Traffic()
    runner, port = await serve(make_app(CannedBackend(traffic), traffic))
    try:
        env = agent_environment(os.environ, proxy_handles(port), prompt, {})
        # Never set: doctor reports everything the agent sends, refused requests included, so
        # it does not stop the agent at the first one the way a flow does.
        run_to_the_end = asyncio.Event()
        agent = await run_command(command, env, timeout, run_to_the_end)
    finally:
        await runner.cleanup()
    return DoctorReport(tuple(traffic.requests), agent, port)

"""Run the agent as a shell command, bounded in time, and stop its whole process tree.

The agent gets its own session (process group) so that `sh -c "npm run x"` and everything it
forks can be signalled together; descendants that started a session of their own are found
through /proc and stopped too.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from flowproof._tasks import create_task

TAIL_LINES = 20
GRACE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class AgentOutcome:
    """How the agent process ended. Informational: the verdict comes from the traffic."""

    exit_code: int | None
    """None when flowproof had to stop it."""
    timed_out: bool
    stopped_early: bool
    """True when flowproof stopped it because the flow had already failed at the boundary."""
    stdout_tail: str
    stderr_tail: str
    seconds: float


async def run_command(
    command: str, env: Mapping[str, str], timeout: float, stop: asyncio.Event
) -> AgentOutcome:
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        command,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    stdout: deque[str] = deque(maxlen=TAIL_LINES)
    stderr: deque[str] = deque(maxlen=TAIL_LINES)
    readers = [
        create_task(_drain(process.stdout, stdout), name="agent-stdout"),
        create_task(_drain(process.stderr, stderr), name="agent-stderr"),
    ]
    exited = create_task(process.wait(), name="agent-wait")
    stopped = create_task(stop.wait(), name="agent-stop")
    await asyncio.wait({exited, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    timed_out = not exited.done() and not stop.is_set()
    stopped_early = not exited.done() and stop.is_set()
    if stopped_early:
        # Give the agent a moment to read its error answer and exit on its own.
        await asyncio.wait({exited}, timeout=GRACE_SECONDS)
    stopped.cancel()
    await stop_tree(process.pid)
    await exited
    await asyncio.wait(readers, timeout=GRACE_SECONDS)
    for reader in readers:
        reader.cancel()
    code = None if (timed_out or stopped_early) else process.returncode
    return AgentOutcome(
        code,
        timed_out,
        stopped_early,
        "\n".join(stdout),
        "\n".join(stderr),
        time.monotonic() - started,
    )


async def _drain(stream: asyncio.StreamReader | None, tail: deque[str]) -> None:
    if stream is None:
        return
    async for line in stream:
        tail.append(line.decode(errors="replace").rstrip("\n"))


async def stop_tree(pid: int) -> None:
    """SIGTERM the agent's process group and every descendant, then SIGKILL what is left."""
    victims = _descendants(pid)
    _signal_all(pid, victims, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline and any(_alive(p) for p in victims):
        await asyncio.sleep(0.05)
    _signal_all(pid, _descendants(pid) | victims, signal.SIGKILL)


def _signal_all(pid: int, pids: set[int], sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for child in pids:
        try:
            os.kill(child, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _descendants(root: int) -> set[int]:
    """Every live process below `root`, read from /proc (empty where /proc is absent)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return set()
    for entry in entries:
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found

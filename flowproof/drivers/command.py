"""Run the agent as a shell command, bounded in time, and stop its whole process tree.

The agent is started through a launcher (drivers/launch.py) in a session of its own, so that
`sh -c "npm run x"` and everything it forks can be signalled together; host/processes.py finds
and stops the tree, descendants that started a session of their own included. Its output goes
to pipes flowproof owns (drivers/output.py), so the flow ends when the agent exits, however
long a child it left behind keeps its stdout open, and no output can stall the reader.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import BinaryIO

from flowproof.core.tasks import create_task
from flowproof.drivers.base import DriverOutcome
from flowproof.drivers.launch import PLAIN, Launcher
from flowproof.drivers.output import OutputPipe, output_pipes
from flowproof.host.processes import GRACE_SECONDS, process_clock, stop_tree


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOutcome(DriverOutcome):
    """How the agent process ended. Informational: the verdict comes from the traffic."""

    exit_code: int | None
    """None when flowproof had to stop it."""
    stdout_tail: str
    stderr_tail: str


@dataclass(frozen=True, slots=True)
class _Ending:
    timed_out: bool
    stopped_early: bool


def shell_argv(command: str) -> tuple[str, ...]:
    """The command line the agent's spec names, run the way a CI step runs it."""
    return ("/bin/sh", "-c", command)


async def run_command(
    command: str,
    env: Mapping[str, str],
    timeout: float,
    stop: asyncio.Event,
    launcher: Launcher = PLAIN,
    cwd: str | None = None,
    later_turns: AsyncIterator[str] | None = None,
) -> AgentOutcome:
    """`cwd`: the directory the agent runs in (None: flowproof's own). `later_turns`: a
    conversation's user turns after the first, each written on the agent's stdin as one line
    (a JSON string) as the iterator yields it, stdin closed after the last; None leaves stdin
    on /dev/null, as a single-turn agent has it."""
    started = time.monotonic()
    # Taken before the spawn: every child flowproof gains from here on is this agent's orphan.
    since = process_clock()
    turns = _TurnPipe.opened() if later_turns is not None else None
    feeding = None
    try:
        async with output_pipes() as (stdout, stderr):
            # `stdin` only when there is one: a launcher written before conversations has none.
            given = {"stdin": turns.read_end} if turns is not None else {}
            async with launcher.launch(
                shell_argv(command), env, stdout.child_end, stderr.child_end, cwd=cwd, **given
            ) as process:
                stdout.handed_over()
                stderr.handed_over()
                if turns is not None and later_turns is not None:
                    feeding = create_task(_feed(turns.handed_over(), later_turns), name="stdin")
                try:
                    ending = await _wait_for_end(process, timeout, stop)
                finally:
                    if feeding is not None:
                        feeding.cancel()
                        with suppress(asyncio.CancelledError):
                            await feeding
                    # Also on cancellation: a flow ends with the agent's tree gone, whatever
                    # happened, and the launcher's context is left only after that.
                    await stop_tree(process.pid, adopted_since=since)
                    await _reaped(process)
            await _drain(stdout, stderr)
    finally:
        if turns is not None:
            turns.close()
    stopped = ending.timed_out or ending.stopped_early
    return AgentOutcome(
        exit_code=None if stopped else process.returncode,
        timed_out=ending.timed_out,
        stopped_early=ending.stopped_early,
        stdout_tail=stdout.tail(),
        stderr_tail=stderr.tail(),
        seconds=time.monotonic() - started,
    )


class _TurnPipe:
    """The pipe a conversation's later turns reach the agent's stdin through. The agent's end
    is closed here once the agent holds it, and flowproof's end by the writer once it has it;
    `close` closes whatever is still held (a launch that failed)."""

    def __init__(self, read_end: int, write_end: int) -> None:
        self.read_end: int | None = read_end
        self.write_end: int | None = write_end

    @classmethod
    def opened(cls) -> _TurnPipe:
        return cls(*os.pipe())

    def handed_over(self) -> BinaryIO:
        """The agent holds its end now: flowproof's end, for the writer to own and close."""
        assert self.read_end is not None and self.write_end is not None
        os.close(self.read_end)  # the agent's copy alone keeps the pipe's read side open
        writer = os.fdopen(self.write_end, "wb")
        self.read_end = self.write_end = None
        return writer

    def close(self) -> None:
        for fd in (self.read_end, self.write_end):
            if fd is not None:
                os.close(fd)
        self.read_end = self.write_end = None


async def _feed(pipe: BinaryIO, lines: AsyncIterator[str]) -> None:
    """Write each of `lines` to `pipe` as one JSON-string line, then close it. An agent that
    has gone (or closed its stdin) just stops the writing: what it did not answer is judged
    from the traffic (conversation.py)."""
    loop = asyncio.get_running_loop()
    try:
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, pipe)
    except BaseException:
        pipe.close()
        raise
    try:
        async for line in lines:
            if transport.is_closing():
                return
            transport.write(json.dumps(line, ensure_ascii=False).encode() + b"\n")
    finally:
        transport.close()


async def _wait_for_end(
    process: asyncio.subprocess.Process, timeout: float, stop: asyncio.Event
) -> _Ending:
    # The process holds no pipe (the driver's are its stdout and stderr), so its wait() ends
    # when it exits, not when everything that inherited its output has closed it.
    exited = create_task(process.wait(), name="agent-wait")
    stopped = create_task(stop.wait(), name="agent-stop")
    try:
        await asyncio.wait({exited, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        ending = _Ending(
            timed_out=not exited.done() and not stop.is_set(),
            stopped_early=not exited.done() and stop.is_set(),
        )
        if ending.stopped_early:
            # Give the agent a moment to read its error answer and exit on its own.
            await asyncio.wait({exited}, timeout=GRACE_SECONDS)
        return ending
    finally:
        stopped.cancel()
        exited.cancel()


async def _reaped(process: asyncio.subprocess.Process) -> None:
    """Wait for the leader's exit status, bounded: stop_tree has SIGKILLed it, and only a
    process stuck in the kernel outlives that; flowproof does not wait on one for ever."""
    try:
        await asyncio.wait_for(process.wait(), GRACE_SECONDS)
    except TimeoutError:
        pass


async def _drain(*pipes: OutputPipe) -> None:
    """Let the readers take what is left in the pipes, but never wait on a pipe for long: a
    process that escaped the tree may still hold it open (output_pipes closes it anyway)."""
    await asyncio.gather(*(pipe.drained(GRACE_SECONDS) for pipe in pipes))

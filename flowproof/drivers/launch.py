"""How the agent's process is started: the seam a containing launcher plugs into.

The command driver never spawns the agent itself; it enters a `Launcher`'s context, drives the
process it yields, and stops the whole tree and waits for the process *before* leaving the
context. That order is what a launcher that runs something beside the agent needs. A seccomp
user-notification supervisor, for one, must outlive every task under its filter (a trapped call
whose supervisor has gone fails with ENOSYS) and is torn down only once the tree is gone; the
launcher also owns the spawn call itself, because the filter is installed in the child between
fork and exec and the listener handed over through a pipe while spawning.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from flowproof.host.processes import adopt_orphans, owned_process

if TYPE_CHECKING:
    from flowproof.containment.session import Supervision


class Launcher(Protocol):
    """Starts the agent, and keeps whatever it runs beside it alive exactly as long."""

    def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stdout: int,
        stderr: int,
        *,
        cwd: str | None = None,
        stdin: int | None = None,
    ) -> AbstractAsyncContextManager[asyncio.subprocess.Process]:
        """Start `argv` with exactly `env`, in `cwd` (None: flowproof's own working directory),
        and yield the started process.

        The process leads a new session (its pid is its process group id, which is how its
        tree is signalled together), reads stdin from /dev/null (or from the file descriptor
        `stdin`: the pipe a conversation's later turns are written to), and writes to the file
        descriptors `stdout` and `stderr` (the driver's pipes, drivers/output.py): the process
        object must hold no pipe of its own, so that waiting for it ends when it exits. It is
        spawned through `process.owned_process`, so that no other flow's stop takes it for an
        orphan of its own while it runs (flows run at once under `run -j`). The
        caller stops the tree and waits for the process before the context exits; on exit the
        launcher tears down only what it started beside the agent.
        """
        ...


@dataclass(frozen=True, slots=True)
class PlainLauncher:
    """No containment: the agent runs as an ordinary child of flowproof, which adopts its
    orphans where the kernel allows (host.processes.adopt_orphans) so none can slip away."""

    @asynccontextmanager
    async def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stdout: int,
        stderr: int,
        *,
        cwd: str | None = None,
        stdin: int | None = None,
    ) -> AsyncIterator[asyncio.subprocess.Process]:
        adopt_orphans()
        spawn = asyncio.create_subprocess_exec(
            *argv,
            env=dict(env),
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL if stdin is None else stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        async with owned_process(spawn) as process:
            yield process


PLAIN = PlainLauncher()


@dataclass(frozen=True, slots=True)
class SeccompLauncher:
    """Egress containment (Linux): the agent runs under the seccomp filter, and the supervisor
    decides its network calls for as long as it lives (containment/session.py)."""

    supervision: Supervision

    @asynccontextmanager
    async def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stdout: int,
        stderr: int,
        *,
        cwd: str | None = None,
        stdin: int | None = None,
    ) -> AsyncIterator[asyncio.subprocess.Process]:
        from flowproof.containment.session import contained_process

        adopt_orphans()
        async with contained_process(
            argv, env, stdout, stderr, self.supervision, cwd=cwd, stdin=stdin
        ) as process:
            yield process

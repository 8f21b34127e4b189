"""The engine side: start the agent through the trampoline, take its listener, supervise.

`contained_process` is what the seccomp launcher (drivers/launch.py) runs: it spawns the
trampoline (containment/seccomp.py) as `engine_argv()` with the user's environment (the flow's
snapshot, through `host_environ`), so a frozen engine starts a frozen trampoline with the
system's libraries; the agent's own environment travels in a memfd and is what the agent is
exec'd with.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

from flowproof.containment import _linux
from flowproof.containment.findings import Findings
from flowproof.containment.pins import PinnedPolicy
from flowproof.containment.seccomp import TRAMPOLINE
from flowproof.core.errors import FlowproofError
from flowproof.host.engine_argv import engine_argv
from flowproof.host.environ import host_environ
from flowproof.host.libc import prctl
from flowproof.host.processes import owned_process

HANDOVER_SECONDS = 60.0
"""How long the trampoline may take to start and install the filter (a loaded CI machine)."""
STOP_GRACE = 2.0


class ContainmentError(FlowproofError):
    """Containment was available at the probe but could not be set up for this agent."""


@dataclass(frozen=True, slots=True)
class Supervision:
    """What one contained agent runs under, and where the supervisor writes what it saw."""

    policy: PinnedPolicy
    findings: Findings
    environ: Mapping[str, str]
    """The user's environment as the flow read it; the trampoline starts with it."""
    observe_fs: bool = True


@asynccontextmanager
async def contained_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    stdout: int,
    stderr: int,
    supervision: Supervision,
    *,
    cwd: str | None = None,
    stdin: int | None = None,
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`cwd`: where the agent runs; the trampoline starts in flowproof's own directory (where
    the engine is importable however it was started) and changes directory just before exec.
    `stdin`: what the agent reads (None: /dev/null); the trampoline hands it on by exec."""
    from flowproof.containment import fsobserve, netcalls
    from flowproof.containment.supervisor import Supervisor

    config = os.memfd_create("flowproof-agent", os.MFD_CLOEXEC)
    os.write(
        config,
        json.dumps(
            {
                "argv": list(argv),
                "env": dict(env),
                "cwd": cwd,
                "observe_fs": supervision.observe_fs,
            }
        ).encode(),
    )
    os.lseek(config, 0, os.SEEK_SET)
    report_r, report_w = os.pipe()
    ack_r, ack_w = os.pipe()
    _undumpable.enter()
    supervisor = None
    try:
        handed = (config, report_w, ack_r)
        spawn = _start_trampoline(stdout, stderr, handed, supervision.environ, stdin)
        async with owned_process(spawn) as process:
            try:
                listener = await _handover(process, report_r)
            except BaseException:
                with suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
                raise
            observer = fsobserve.FsObserver(listener, supervision.findings)
            supervisor = Supervisor(
                listener,
                supervision.policy,
                supervision.findings,
                netcalls.HANDLERS,
                netcalls.on_foreign,
                observer.handle if supervision.observe_fs else None,
                fsobserve.FS_NUMBERS,
                receiver=observer.receiver if supervision.observe_fs else _linux.receiver,
                receiver_done=observer.close,
            )
            supervisor.start()
            supervision.findings.started = _now()
            os.write(ack_w, b"k")
            yield process
    finally:
        os.close(report_r)
        os.close(ack_w)
        if supervisor is not None:
            await asyncio.to_thread(supervisor.stop, STOP_GRACE)
        _undumpable.leave()


async def _start_trampoline(
    stdout: int,
    stderr: int,
    handed: tuple[int, int, int],
    environ: Mapping[str, str],
    stdin: int | None = None,
) -> asyncio.subprocess.Process:
    """Start the trampoline with the config memfd, the report pipe's write end and the ack
    pipe's read end (in that order on its command line), which are closed here once it has
    them."""
    try:
        return await asyncio.create_subprocess_exec(
            *engine_argv(),
            TRAMPOLINE,
            *map(str, handed),
            env=host_environ(environ),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            pass_fds=handed,
        )
    finally:
        for fd in handed:
            os.close(fd)


async def _handover(process: asyncio.subprocess.Process, report_r: int) -> int:
    try:
        line = await asyncio.wait_for(asyncio.to_thread(_read_line, report_r), HANDOVER_SECONDS)
    except TimeoutError:
        raise ContainmentError(
            f"the containment trampoline did not report within {HANDOVER_SECONDS:.0f} s"
        ) from None
    if not line:
        code = await process.wait()
        raise ContainmentError(
            f"the containment trampoline exited (code {code}) before installing the filter"
        )
    message = json.loads(line)
    if "error" in message:
        raise ContainmentError(f"could not install the seccomp filter: {message['error']}")
    pidfd = _linux.pidfd_open(int(message["pid"]))
    try:
        return _linux.pidfd_getfd(pidfd, int(message["fd"]))
    finally:
        os.close(pidfd)


class _Undumpable:
    """PR_SET_DUMPABLE 0 for as long as any agent is contained (`run -j` contains several at
    once, and the flag is the whole process's): the agent must not be able to open flowproof's
    /proc files or take a listener with pidfd_getfd. The trampoline turns its own flag back on.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._before = 1

    def enter(self) -> None:
        with self._lock:
            if self._count == 0:
                self._before = prctl(_linux.PR_GET_DUMPABLE)
                prctl(_linux.PR_SET_DUMPABLE, 0)
            self._count += 1

    def leave(self) -> None:
        with self._lock:
            self._count -= 1
            if self._count == 0:
                prctl(_linux.PR_SET_DUMPABLE, self._before)


_undumpable = _Undumpable()


def _read_line(fd: int) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


def _now() -> float:
    import time

    return time.monotonic()

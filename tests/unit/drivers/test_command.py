"""run_command with real shells: outcomes, the launcher seam, and the tree gone every way out."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from flowproof.drivers.base import DriverOutcome
from flowproof.drivers.command import AgentOutcome, run_command
from flowproof.drivers.launch import PLAIN
from flowproof.drivers.output import CUT, TAIL_BYTES
from flowproof.host.processes import GRACE_SECONDS

SPAWN_TREE = Path(__file__).with_name("spawn_tree.py")
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def run(command: str, timeout: float = 30, stop: asyncio.Event | None = None) -> AgentOutcome:
    async def main() -> AgentOutcome:
        return await run_command(command, ENV, timeout, stop or asyncio.Event())

    return asyncio.run(main())


def tree_command(pidfile: Path, *levels: str) -> str:
    return shlex.join([sys.executable, str(SPAWN_TREE), str(pidfile), *levels]) + " & wait"


def pids_in(pidfile: Path) -> list[int]:
    return [int(pid) for pid in pidfile.read_text().split()] if pidfile.exists() else []


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_an_agent_that_exits_reports_its_code_and_output_tails() -> None:
    outcome = run("echo out; echo err >&2; exit 3")
    assert isinstance(outcome, DriverOutcome)
    assert (outcome.exit_code, outcome.stdout_tail, outcome.stderr_tail) == (3, "out", "err")
    assert not outcome.timed_out and not outcome.stopped_early


def test_only_the_last_lines_are_kept() -> None:
    outcome = run("seq 1 25")
    assert outcome.stdout_tail.splitlines() == [str(n) for n in range(6, 26)]


def test_an_agent_past_its_timeout_is_stopped_with_its_whole_tree(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    outcome = run(tree_command(pidfile, "plain", "setsid"), timeout=1.5)
    assert outcome.timed_out and not outcome.stopped_early and outcome.exit_code is None
    assert len(pids_in(pidfile)) == 2, "precondition: the tree was up before the timeout"
    assert all(gone(pid) for pid in pids_in(pidfile))
    assert outcome.seconds < 10


def test_a_stop_request_ends_the_agent_early() -> None:
    async def main() -> AgentOutcome:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.2, stop.set)
        return await run_command("sleep 30", ENV, 30, stop)

    outcome = asyncio.run(main())
    assert outcome.stopped_early and not outcome.timed_out and outcome.exit_code is None
    assert outcome.seconds < 10


def test_a_cancelled_run_still_stops_the_tree(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"

    async def main() -> None:
        running = asyncio.ensure_future(
            run_command(tree_command(pidfile, "plain", "setsid"), ENV, 30, asyncio.Event())
        )
        while len(pids_in(pidfile)) < 2:
            await asyncio.sleep(0.02)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(asyncio.wait_for(main(), timeout=20))
    assert all(gone(pid) for pid in pids_in(pidfile))


@dataclass
class WatchingLauncher:
    """The plain launcher, plus notes on what the agent looked like when the context closed:
    what a supervisor running beside the agent would see when it is torn down."""

    pidfile: Path
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    returncode_at_exit: int | None = None
    running_at_exit: list[int] = field(default_factory=list)

    @asynccontextmanager
    async def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        stdout: int,
        stderr: int,
        *,
        cwd: str | None = None,
    ) -> AsyncIterator[asyncio.subprocess.Process]:
        self.argv, self.env = list(argv), dict(env)
        async with PLAIN.launch(argv, env, stdout, stderr, cwd=cwd) as process:
            yield process
            self.returncode_at_exit = process.returncode
            self.running_at_exit = [pid for pid in pids_in(self.pidfile) if not gone(pid)]


def test_the_launcher_starts_the_shell_and_outlives_the_whole_tree(tmp_path: Path) -> None:
    launcher = WatchingLauncher(tmp_path / "pids")
    command = tree_command(launcher.pidfile, "plain", "setsid")

    async def main() -> AgentOutcome:
        return await run_command(command, ENV, 1.5, asyncio.Event(), launcher=launcher)

    started = time.monotonic()
    outcome = asyncio.run(main())
    assert outcome.timed_out and time.monotonic() - started < 10
    assert launcher.argv == ["/bin/sh", "-c", command] and launcher.env == ENV
    assert len(pids_in(launcher.pidfile)) == 2
    assert launcher.returncode_at_exit is not None, "the agent was waited for inside the context"
    assert launcher.running_at_exit == [], "the tree was gone before the context closed"


def python_command(code: str) -> str:
    return shlex.join([sys.executable, "-c", code])


def test_a_line_longer_than_any_buffer_is_drained_and_its_end_kept() -> None:
    """asyncio's line reader gives up past 64 KiB without a newline; the agent then blocks
    on a full pipe. The tail keeps the end, where the error is."""
    writes = "import sys; sys.stderr.write('x' * (4 << 20) + ' the END'); sys.exit(1)"
    outcome = run(python_command(writes), timeout=20)
    assert (outcome.exit_code, outcome.timed_out) == (1, False)
    assert outcome.stderr_tail.endswith("x the END") and outcome.stderr_tail.startswith(CUT)
    assert len(outcome.stderr_tail) <= TAIL_BYTES + len(CUT)
    assert outcome.seconds < 10


def test_a_long_line_from_an_agent_that_then_hangs_ends_at_the_timeout() -> None:
    writes = (
        "import sys, time; sys.stdout.write('y' * (4 << 20)); sys.stdout.flush(); time.sleep(60)"
    )
    outcome = run(python_command(writes), timeout=2)
    assert outcome.timed_out and outcome.exit_code is None
    assert outcome.stdout_tail.endswith("yyy")
    assert outcome.seconds < 2 + 2 * GRACE_SECONDS + 2


def test_the_flow_ends_when_the_agent_exits_though_a_child_holds_its_output(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pids"
    outcome = run(f"sleep 60 & echo $! > {pidfile}; echo done", timeout=20)
    assert (outcome.exit_code, outcome.timed_out, outcome.stdout_tail) == (0, False, "done")
    assert outcome.seconds < 10
    assert gone(int(pidfile.read_text()))


def test_a_daemon_left_by_an_agent_that_passed_is_stopped(tmp_path: Path) -> None:
    """The middle level exits, so the bottom one, in a session of its own, has neither the
    agent's group, nor its session, nor an ancestor in the tree: only adoption finds it."""
    pidfile = tmp_path / "pids"
    spawn = shlex.join([sys.executable, str(SPAWN_TREE), str(pidfile), "exit", "setsid"])
    wait_for_two = f'until [ "$(wc -l < {pidfile})" -ge 2 ] 2>/dev/null; do sleep 0.05; done'
    outcome = run(f"{spawn}; {wait_for_two}", timeout=20)
    assert (outcome.exit_code, outcome.timed_out) == (0, False)
    daemon = pids_in(pidfile)[1]
    assert gone(daemon)

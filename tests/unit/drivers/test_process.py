"""stop_tree against real process trees: each process proven gone, each test bounded in time."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from flowproof.host.processes import find_tree, owned_process, process_clock, stop_tree

HERE = Path(__file__).parent
SPAWN_TREE = HERE / "spawn_tree.py"
ROOT = HERE.parents[2]
GRACE = 0.5
"""Short, so that a test which must sit out the grace stays quick."""
SETTLED = 5.0
"""Generous bound on how long stopping a tree that obeys SIGTERM may take on a busy machine."""


class Trees:
    """Starts trees for one test and, whatever the test did, leaves none behind."""

    def __init__(self, tmp_path: Path) -> None:
        self._tmp_path = tmp_path
        self._started: list[tuple[subprocess.Popen[bytes], list[int]]] = []

    def start(
        self, *levels: str, under_shell: bool = True
    ) -> tuple[subprocess.Popen[bytes], list[int]]:
        """A session leader (`sh -c '… & wait'`, or the first level itself) and the pid of
        every level, once all of them are set up."""
        pidfile = self._tmp_path / f"tree-{len(self._started)}.pids"
        argv = [sys.executable, str(SPAWN_TREE), str(pidfile), *levels]
        if under_shell:
            argv = ["/bin/sh", "-c", shlex.join(argv) + " & wait"]
        leader = subprocess.Popen(argv, start_new_session=True)
        pids = _wait_for_pids(pidfile, len(levels))
        self._started.append((leader, pids))
        return leader, pids

    def clean_up(self) -> None:
        for leader, pids in self._started:
            for pid in (leader.pid, *pids):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            leader.wait(timeout=5)


@pytest.fixture
def trees(tmp_path: Path) -> Iterator[Trees]:
    started = Trees(tmp_path)
    yield started
    started.clean_up()


def _wait_for_pids(pidfile: Path, count: int, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = pidfile.read_text().split() if pidfile.exists() else []
        if len(pids) >= count:
            return [int(pid) for pid in pids]
        time.sleep(0.02)
    raise AssertionError(f"the tree did not set up {count} levels within {timeout}s")


def stop(leader: subprocess.Popen[bytes], grace: float = GRACE) -> float:
    """Stop the tree, reap the leader (our child), and say how long stopping took."""
    began = time.monotonic()
    asyncio.run(stop_tree(leader.pid, grace))
    took = time.monotonic() - began
    leader.wait(timeout=5)
    return took


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_grandchild_that_started_its_own_session_is_stopped(trees: Trees) -> None:
    leader, [daemon] = trees.start("setsid")
    assert os.getpgid(daemon) != leader.pid, "precondition: signalling the group misses it"
    assert stop(leader) < SETTLED
    assert gone(daemon)


def test_a_tree_that_obeys_sigterm_does_not_wait_out_the_grace(trees: Trees) -> None:
    leader, pids = trees.start("plain", "plain")
    assert stop(leader, grace=SETTLED) < SETTLED / 2
    assert all(gone(pid) for pid in pids)


@pytest.mark.parametrize("under_shell", [True, False], ids=["child-of-a-shell", "the-leader"])
def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(
    trees: Trees, under_shell: bool
) -> None:
    leader, [stubborn] = trees.start("ignore-term", under_shell=under_shell)
    took = stop(leader)
    assert GRACE <= took < GRACE + SETTLED
    assert gone(stubborn)


def test_a_tree_several_levels_deep_is_stopped_to_the_bottom(trees: Trees) -> None:
    levels = ("plain", "setsid", "plain", "setsid", "ignore-term")
    leader, pids = trees.start(*levels)
    assert len(set(pids)) == len(levels)
    assert {p.pid for p in find_tree(leader.pid)} >= {leader.pid, *pids}
    took = stop(leader)
    assert GRACE <= took < GRACE + SETTLED, "the stubborn bottom level is waited for, then killed"
    assert [pid for pid in pids if not gone(pid)] == []


def test_an_orphan_left_in_the_group_is_stopped_and_waited_for(trees: Trees) -> None:
    """Its parent exited, so it is no longer a descendant; the group still holds it."""
    leader, [_, orphan] = trees.start("exit", "ignore-term")
    took = stop(leader)
    assert GRACE <= took < GRACE + SETTLED
    assert gone(orphan)


def test_an_orphan_in_a_group_of_its_own_is_found_by_the_session(trees: Trees) -> None:
    """Job control moves a process to a group of its own; once its parent is gone only the
    session it stayed in ties it to the agent."""
    leader, [_, orphan] = trees.start("exit", "setpgid")
    assert os.getpgid(orphan) != leader.pid and os.getsid(orphan) == leader.pid
    assert stop(leader) < SETTLED
    assert gone(orphan)


def test_a_leader_already_gone_is_nothing_to_stop(trees: Trees) -> None:
    leader, _ = trees.start("exit", under_shell=False)
    leader.wait(timeout=5)
    assert find_tree(leader.pid) == set()
    assert stop(leader) < SETTLED


def test_orphans_adopted_by_flowproof_are_reaped(tmp_path: Path) -> None:
    """As PID 1 of a container (or a subreaper) flowproof inherits the tree's orphans; nothing
    else will collect their exit status, so stop_tree must, or they stay zombies."""
    done = subprocess.run(
        [sys.executable, str(HERE / "adopting_parent.py"), str(tmp_path / "pids")],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["adopted"], "precondition: the orphan was reparented to the stopping process"
    assert report["zombies"] == []
    assert gone(report["orphan"])


def test_a_pid_that_leads_no_group_is_not_taken_for_a_leader() -> None:
    """A session leader's pid is its group id for life; a pid that is not (as after the
    kernel reused a reaped leader's pid) is left alone."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        assert os.getpgid(bystander.pid) != bystander.pid
        assert find_tree(bystander.pid) == set()
    finally:
        bystander.kill()
        bystander.wait(timeout=5)


def test_a_flow_stopping_while_another_flow_spawns_leaves_the_newborn_alone() -> None:
    """Under `run -j` one flow's stop looks for the orphans flowproof gained since its agent
    started, while a sibling flow's agent is between its fork and its registration as a
    process flowproof owns. That newborn is no orphan: the stop waits for the spawn to be
    registered, and the sibling's agent lives on (the CI failure this is the test of: an agent
    SIGTERMed at birth, exit -15, in a 20-flow parallel replay)."""

    async def scenario() -> tuple[bool, bool]:
        since = process_clock()
        stopping = await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True)
        born = asyncio.Event()
        registered = asyncio.Event()

        async def slow_spawn() -> asyncio.subprocess.Process:
            newborn = await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True)
            born.set()
            await registered.wait()  # the fork-to-registration window, held open
            return newborn

        async def sibling() -> asyncio.subprocess.Process:
            async with owned_process(slow_spawn()) as newborn:
                await asyncio.sleep(0.5)  # runs while the other flow's stop finishes
                alive = newborn.returncode is None and not gone(newborn.pid)
                newborn.kill()
                await newborn.wait()
                return alive

        sibling_task = asyncio.create_task(sibling())
        await born.wait()
        stop_task = asyncio.create_task(stop_tree(stopping.pid, GRACE, adopted_since=since))
        await asyncio.sleep(0.2)  # the stop is under way before the spawn is registered
        registered.set()
        await stop_task
        await stopping.wait()
        return await sibling_task, stopping.returncode is not None

    newborn_alive, stopped = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert stopped
    assert newborn_alive, "a stop took a sibling flow's newborn agent for an orphan"


def _stopped_by_a_subreaper(tmp_path: Path, *levels: str) -> dict[str, list[int] | int]:
    done = subprocess.run(
        [sys.executable, str(HERE / "subreaper_stops.py"), str(tmp_path / "pids"), *levels],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, list[int] | int] = json.loads(done.stdout)
    return report


@pytest.mark.skipif(sys.platform != "linux", reason="a child subreaper is Linux's")
def test_an_agent_that_left_nothing_is_stopped_without_walking_every_process(
    tmp_path: Path,
) -> None:
    """The common end of a flow: the agent exited and took its tree with it. Its group is
    empty and flowproof adopted no orphan, so nothing is looked for on the whole machine."""
    report = _stopped_by_a_subreaper(tmp_path, "exit")
    assert report["running"] == []
    assert report["walks"] == 0


@pytest.mark.skipif(sys.platform != "linux", reason="a child subreaper is Linux's")
@pytest.mark.parametrize(
    "left", ["plain", "setpgid", "setsid", "setsid-then-exit"], ids=lambda left: left
)
def test_what_an_agent_that_exited_left_behind_is_still_found_and_stopped(
    tmp_path: Path, left: str
) -> None:
    """An orphan in the agent's group, in a group of its own, in a session of its own, or the
    grandchild of a finished double fork: each is adopted, so the walk is not skipped."""
    levels = ["exit", *left.split("-then-")]
    if levels[-1] == "exit":
        levels.append("plain")  # the double fork's grandchild, orphaned once more
    report = _stopped_by_a_subreaper(tmp_path, *levels)
    assert report["running"] == [], f"left running: {report}"
    assert isinstance(report["walks"], int) and report["walks"] >= 1


def test_stopping_a_tree_waits_for_exits_without_polling(
    trees: Trees, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel has pidfds, each SIGTERMed process is waited on through its own: the
    stop wakes as the last one exits, and never sleeps to look again."""
    if not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfds here: the stop polls")
    leader, pids = trees.start("plain", "setsid", "plain")

    async def no_sleeping(delay: float, result: object = None) -> object:
        raise AssertionError(f"the stop slept {delay}s to look again")

    monkeypatch.setattr(asyncio, "sleep", no_sleeping)
    assert stop(leader, grace=SETTLED) < SETTLED / 2
    assert all(gone(pid) for pid in pids)

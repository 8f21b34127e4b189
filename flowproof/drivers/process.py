"""Find the agent's process tree and stop all of it: one mechanism, through psutil.

The agent's tree is the session leader flowproof started, every member of its process group,
and every descendant of the leader by parentage. Parentage is what catches a daemonising
grandchild: `setsid` takes it out of the group, but it keeps its parent. A process that has
both left the group and lost every ancestor before we look (a finished double fork) cannot be
told from the rest of the machine without help from the kernel (a subreaper or a cgroup),
which is the launcher's business (drivers/launch.py), not this module's.

psutil identifies a process by pid *and* start time, so a pid the kernel has handed to an
unrelated process since we looked is never signalled.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterable

import psutil

GRACE_SECONDS = 2.0
"""How long a SIGTERMed process has to go before it is SIGKILLed."""
_POLL_SECONDS = 0.05


async def stop_tree(leader: int, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the tree led by `leader`, give it `grace` seconds to go, SIGKILL what is left.

    Returns once every process found is gone (a zombie counts as gone), waiting at most `grace`
    again after the SIGKILL. Zombies that are flowproof's own children (orphans it adopted as
    PID 1 of a container, or as a subreaper) are reaped here. The leader never is: it is the
    caller's child, and its exit status belongs to whoever started it.
    """
    victims = find_tree(leader)
    _signal_all(leader, victims, signal.SIGTERM)
    await _wait_gone(victims, grace)
    # Processes forked during the grace were not there to be found the first time.
    victims |= find_tree(leader)
    _signal_all(leader, victims, signal.SIGKILL)
    await _wait_gone(victims, grace)
    _reap_adopted(victims, leader)


def find_tree(leader: int) -> set[psutil.Process]:
    """The tree led by `leader`: itself, its descendants and its group, zombies included (so
    that the ones we adopted can be reaped)."""
    found = set(_group_members(leader))
    try:
        root = psutil.Process(leader)
        # A session leader's group id is its pid for life; anything else under this pid is a
        # newcomer that reused it after our leader was reaped, and none of ours.
        if os.getpgid(leader) == leader:
            found.add(root)
            found.update(root.children(recursive=True))
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass
    return found


def _group_members(group: int) -> Iterable[psutil.Process]:
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == group:
                yield process
        except ProcessLookupError:
            continue


def _signal_all(leader: int, victims: Iterable[psutil.Process], sig: signal.Signals) -> None:
    # The group first, in one call, so a process forked since we looked still gets it.
    try:
        os.killpg(leader, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for process in victims:
        try:
            process.send_signal(sig)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


async def _wait_gone(processes: Iterable[psutil.Process], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(processes)
    while waiting and time.monotonic() < deadline:
        await asyncio.sleep(_POLL_SECONDS)
        waiting = [process for process in waiting if _alive(process)]


def _alive(process: psutil.Process) -> bool:
    """Running and not a zombie: a zombie has let go of everything but its exit status."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # cannot tell; the caller's deadline bounds the wait


def _reap_adopted(processes: Iterable[psutil.Process], leader: int) -> None:
    """Collect the exit status of the tree's orphans that the kernel made our children.

    Nothing else waits for them (asyncio only waits for the processes it started), so
    without this they would stay zombies for as long as flowproof runs.
    """
    me = os.getpid()
    for process in processes:
        if process.pid == leader:
            continue
        try:
            if process.ppid() != me:
                continue
            os.waitpid(process.pid, os.WNOHANG)
        except (psutil.NoSuchProcess, ChildProcessError):
            continue

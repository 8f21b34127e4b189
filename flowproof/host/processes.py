"""Find the agent's process tree and stop all of it: one mechanism, through psutil.

The agent's tree is the session leader flowproof started, every member of its process group
and of its session, the orphans flowproof adopted since the leader started, and every
descendant of any of those by parentage. Parentage is what catches a daemonising grandchild:
`setsid` takes it out of the group and the session, but it keeps its parent. A process that has
left both and lost every ancestor before we look (a finished double fork) is re-parented to the
nearest child subreaper; the launcher makes flowproof one (adopt_orphans, below), and then
it is found here as an orphan flowproof adopted. Without a subreaper it goes to init, and
nothing short of a cgroup could tell it from the rest of the machine.

psutil identifies a process by pid *and* start time, so a pid the kernel has handed to an
unrelated process since we looked is never signalled.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

GRACE_SECONDS = 2.0
"""How long a SIGTERMed process has to go before it is SIGKILLed."""
_POLL_SECONDS = 0.05
"""How often a process is looked at where the kernel cannot say when it exits (no pidfd)."""
_SPAWN_POLL_SECONDS = 0.005
_PR_SET_CHILD_SUBREAPER = 36
"""prctl option (linux/prctl.h, since Linux 3.4): orphans below us are re-parented to us
instead of to init. Unprivileged, and not inherited across fork."""
_PR_GET_CHILD_SUBREAPER = 37
_TASKS = Path("/proc/self/task")
"""Each thread's `children` file there lists the processes whose parent it is (Linux)."""


def adopt_orphans() -> bool:
    """Make this process the one the agent's orphans are re-parented to, so that a daemonised
    grandchild (setsid, double fork, parent gone) stays findable as flowproof's child.

    Linux only (a child subreaper); elsewhere nothing happens. Returns whether orphans are
    adopted from now on. Idempotent, and inherited by no child.
    """
    if sys.platform != "linux":
        return False
    from flowproof.host.libc import prctl

    try:
        prctl(_PR_SET_CHILD_SUBREAPER, 1)
    except OSError:  # the kernel or a sandbox refuses it
        return False
    return True


def adopts_orphans() -> bool:
    """Whether this process is, right now, the one the agent's orphans are re-parented to
    (adopt_orphans succeeded here, or someone made it so)."""
    if sys.platform != "linux":
        return False
    import ctypes

    from flowproof.host.libc import prctl

    flag = ctypes.c_int(0)
    try:
        prctl(_PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag))
    except OSError:
        return False
    return flag.value != 0


def process_clock() -> float:
    """Now, on the clock psutil dates processes by, less one tick: a process started from here
    on has a `create_time()` at least this.

    On Linux psutil dates a process by the boot time (whole seconds, from /proc/stat) plus
    the clock ticks from boot to its start, which can be a second or more off the wall
    clock; comparing with time.time() would misplace processes started around now.
    """
    if sys.platform == "linux":
        tick = 1 / os.sysconf("SC_CLK_TCK")
        return _boot_time() + time.clock_gettime(time.CLOCK_BOOTTIME) - tick
    return time.time() - 1.0  # psutil dates by the wall clock, to the second at worst


def _boot_time() -> float:
    """/proc/stat's `btime`, read as psutil.boot_time() reads it, without loading psutil on
    every flow (most flows never need it: see _nothing_left)."""
    with open("/proc/stat", "rb") as stat:
        for line in stat:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    import psutil

    return float(psutil.boot_time())


async def stop_tree(
    leader: int, grace: float = GRACE_SECONDS, adopted_since: float | None = None
) -> None:
    """SIGTERM the tree led by `leader`, give it `grace` seconds to go, SIGKILL what is left.

    Returns once every process found is gone (a zombie counts as gone), waiting at most `grace`
    again after the SIGKILL. Zombies that are flowproof's own children (orphans it adopted as
    PID 1 of a container, or as a subreaper) are reaped here. The leader never is: it is the
    caller's child, and its exit status belongs to whoever started it.

    `adopted_since` (a `process_clock()` reading taken before the leader started) counts
    flowproof's own children started since then as the tree's orphans, except the other
    processes flowproof runs on purpose (`owned_process`) and their sessions.
    """
    if _nothing_left(leader):
        return  # the common end: the agent exited and took its tree with it
    victims = await _find_tree_settled(leader, adopted_since)
    _signal_all(leader, victims, signal.SIGTERM)
    await _wait_gone(victims, grace)
    # Processes forked during the grace were not there to be found the first time.
    if not _nothing_left(leader):
        victims |= await _find_tree_settled(leader, adopted_since)
    _signal_all(leader, victims, signal.SIGKILL)
    await _wait_gone(victims, grace)
    _reap_adopted(victims, leader)


def _nothing_left(leader: int) -> bool:
    """Whether the tree is certainly gone, told without walking every process on the machine:
    nothing is left in the leader's process group, and flowproof has no child but the
    processes it runs on purpose (`owned_process`).

    Only where flowproof adopts orphans (Linux, a child subreaper). There, a process of the
    tree that left the group (`setpgid`, `setsid`, a double fork) has an unbroken chain of
    parents up to flowproof: each process that dies hands its children to flowproof. So one
    of flowproof's own children is that process or an ancestor of it, whatever group or
    session it is in. The group is looked at first: a process leaves its group only once it is
    reaped, and by then its children are already flowproof's.
    """
    if not adopts_orphans():
        return False
    try:
        os.killpg(leader, 0)
        return False  # something (a zombie at least) is still in the group
    except PermissionError:
        return False
    except ProcessLookupError:
        pass
    children = _own_children()
    return children is not None and not children - _LIVE_LEADERS


def _own_children() -> set[int] | None:
    """flowproof's child processes, from every thread's `children` file (an orphan is handed to
    one of our threads); None where the kernel keeps no such file. The main thread is read
    last: a thread that exits hands its children to it."""
    main = str(os.getpid())
    try:
        tasks = sorted(os.listdir(_TASKS), key=lambda task: task == main)
    except OSError:
        return None
    found: set[int] = set()
    for task in tasks:
        try:
            found.update(int(pid) for pid in (_TASKS / task / "children").read_text().split())
        except OSError:
            if task == main:
                return None  # no `children` files in this kernel (CONFIG_PROC_CHILDREN)
    return found


async def _find_tree_settled(leader: int, adopted_since: float | None) -> set[psutil.Process]:
    if adopted_since is not None:
        await _no_spawn_in_flight()  # no process flowproof is starting is anyone's orphan
    return find_tree(leader, adopted_since)


def find_tree(leader: int, adopted_since: float | None = None) -> set[psutil.Process]:
    """The tree led by `leader`: itself, its group and session, the orphans adopted since
    `adopted_since` (see stop_tree), and all their descendants, zombies included (so that the
    ones we adopted can be reaped)."""
    import psutil

    roots = set(_group_or_session_members(leader))
    if adopted_since is not None:
        roots.update(_adopted(adopted_since, leader))
    try:
        root = psutil.Process(leader)
        # A session leader's group id is its pid for life; anything else under this pid is a
        # newcomer that reused it after our leader was reaped, and none of ours.
        if os.getpgid(leader) == leader:
            roots.add(root)
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass
    found = set(roots)
    for process in roots:
        try:
            found.update(process.children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return found


def _group_or_session_members(leader: int) -> Iterable[psutil.Process]:
    """A process that moved to a group of its own (job control, `setpgid`) is still in the
    leader's session; only `setsid` leaves both."""
    import psutil

    for process in psutil.process_iter():
        try:
            if leader in (os.getpgid(process.pid), os.getsid(process.pid)):
                yield process
        except (ProcessLookupError, PermissionError):
            continue


_LIVE_LEADERS: set[int] = set()
"""Processes flowproof started on purpose and still runs: the agents of the flows running
at once (`run -j`), and the real MCP servers of a record. None of them, nor anything still in
their sessions, is an orphan of some other flow's agent."""

_spawns_in_flight = 0
"""Spawns between their fork and their pid's registration in _LIVE_LEADERS. The child exists
(it is flowproof's, started after any flow's `adopted_since`) before its pid is known, so a
stop that looked for orphans then would take it for one: a sibling flow's agent SIGTERMed at
birth. Stops wait for the count to be zero before they look."""
_SPAWN_WAIT_SECONDS = 10.0
"""A spawn is milliseconds; a stop does not wait for one longer than this."""


@asynccontextmanager
async def owned_process(
    spawn: Awaitable[asyncio.subprocess.Process],
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Await `spawn` and mark the process it started as one flowproof started and owns
    (`_LIVE_LEADERS`) for as long as the block runs. No stop looks for orphans from the
    moment the spawn begins to the moment its pid is marked."""
    global _spawns_in_flight
    _spawns_in_flight += 1
    try:
        process = await spawn
        _LIVE_LEADERS.add(process.pid)
    finally:
        _spawns_in_flight -= 1
    try:
        yield process
    finally:
        _LIVE_LEADERS.discard(process.pid)


async def _no_spawn_in_flight() -> None:
    deadline = time.monotonic() + _SPAWN_WAIT_SECONDS
    while _spawns_in_flight and time.monotonic() < deadline:
        await asyncio.sleep(_SPAWN_POLL_SECONDS)


def _adopted(since: float, leader: int) -> Iterable[psutil.Process]:
    """flowproof's children started since `since` that belong to no other live leader.

    With flows running at once an orphan that left its session (`setsid`, a daemon) cannot be
    told apart from another flow's: it is counted as the tree of whichever flow stops first.
    One that stayed in its session is always attributed right."""
    import psutil

    others = _LIVE_LEADERS - {leader}
    for child in psutil.Process().children():
        try:
            if child.create_time() < since or child.pid in others:
                continue
            if others and (os.getsid(child.pid) in others or os.getpgid(child.pid) in others):
                continue
            yield child
        except (psutil.NoSuchProcess, ProcessLookupError, PermissionError):
            continue


def _signal_all(leader: int, victims: Iterable[psutil.Process], sig: signal.Signals) -> None:
    import psutil

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
    """Until every process has gone or `timeout` has passed: woken by the kernel as each one
    exits where it can say so (a pidfd per process), else by looking every _POLL_SECONDS."""
    waiting = [process for process in processes if _alive(process)]
    if not waiting or await _exits_awaited(waiting, timeout):
        return
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        await asyncio.sleep(_POLL_SECONDS)
        waiting = [process for process in waiting if _alive(process)]


async def _exits_awaited(processes: list[psutil.Process], timeout: float) -> bool:
    """Wait, at most `timeout`, for each process's pidfd to become readable, which it does
    when the process exits. False, having waited for nothing, where there are no pidfds."""
    if not hasattr(os, "pidfd_open"):
        return False
    loop = asyncio.get_running_loop()
    opened: list[int] = []
    exits: list[asyncio.Future[None]] = []
    try:
        for process in processes:
            try:
                pidfd = os.pidfd_open(process.pid)
            except ProcessLookupError:
                continue  # reaped already
            except OSError:
                return False  # a kernel before 5.3, or a sandbox that refuses the call
            opened.append(pidfd)
            # Looked at again once the pidfd holds the pid: it may have been reaped since the
            # tree was found and reused by an unrelated process, which is none of our waiting.
            if _alive(process):
                exited: asyncio.Future[None] = loop.create_future()
                loop.add_reader(pidfd, _settle, exited)
                exits.append(exited)
        if exits:
            await asyncio.wait(exits, timeout=timeout)
        return True
    finally:
        for pidfd in opened:
            loop.remove_reader(pidfd)
            os.close(pidfd)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _alive(process: psutil.Process) -> bool:
    """Running and not a zombie: a zombie has let go of everything but its exit status."""
    import psutil

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
    import psutil

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

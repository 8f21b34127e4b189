"""stop_tree in a process that adopts orphans (flowproof's own run), after the leader exited.

    PYTHONPATH=<repo> python subreaper_stops.py PIDFILE LEVEL [LEVEL ...]

Makes itself a child subreaper (host.processes.adopt_orphans), starts the spawn_tree.py tree with
the given levels as a session leader, waits for every level to be set up and for the leader to
exit and be reaped (as an agent that finished), stops the tree with psutil's walk of every
process counted, and prints JSON: the pids of the levels, which of them are still running,
and how many times stop_tree walked the machine's processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from flowproof.host.processes import adopt_orphans, process_clock, stop_tree

SPAWN_TREE = Path(__file__).with_name("spawn_tree.py")


def main() -> None:
    pidfile, *levels = sys.argv[1:]
    if not adopt_orphans():
        raise OSError("prctl(PR_SET_CHILD_SUBREAPER) was refused")
    walks = 0
    process_iter = psutil.process_iter

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal walks
        walks += 1
        return process_iter(*args, **kwargs)  # type: ignore[arg-type]

    psutil.process_iter = counted  # type: ignore[assignment]
    since = process_clock()
    leader = subprocess.Popen(
        [sys.executable, str(SPAWN_TREE), pidfile, *levels], start_new_session=True
    )
    pids = _wait_for_pids(Path(pidfile), len(levels))
    leader.wait(timeout=10)  # the levels are set up and the leader is gone, as a finished agent
    asyncio.run(stop_tree(leader.pid, grace=1.0, adopted_since=since))
    running = [pid for pid in pids if _running(pid)]
    print(json.dumps({"pids": pids, "running": running, "walks": walks}))


def _wait_for_pids(path: Path, count: int) -> list[int]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        pids = path.read_text().split() if path.exists() else []
        if len(pids) >= count:
            return [int(pid) for pid in pids]
        time.sleep(0.01)
    raise AssertionError(f"the tree did not set up {count} levels")


def _running(pid: int) -> bool:
    try:
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            os.waitpid(pid, os.WNOHANG)
            return False
        return True
    except psutil.NoSuchProcess:
        return False


if __name__ == "__main__":
    main()

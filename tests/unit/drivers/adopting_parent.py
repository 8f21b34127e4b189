"""stop_tree run by a process that adopts orphans, as flowproof does as PID 1 of a container.

    PYTHONPATH=<repo> python adopting_parent.py PIDFILE

Makes itself a child subreaper (host.processes.adopt_orphans), starts a tree whose middle level exits (so the level below is
reparented to this process), stops the tree, and prints JSON: the orphan's pid, whether it had
been adopted, and the zombie children this process is left with.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from flowproof.host.processes import adopt_orphans, stop_tree

SPAWN_TREE = Path(__file__).with_name("spawn_tree.py")


def main() -> None:
    pidfile = Path(sys.argv[1])
    if not adopt_orphans():
        raise OSError("prctl(PR_SET_CHILD_SUBREAPER) was refused")
    argv = [sys.executable, str(SPAWN_TREE), str(pidfile), "plain", "exit", "plain"]
    leader = subprocess.Popen(argv, start_new_session=True)
    orphan = _wait_for_lines(pidfile, 3)[2]
    adopted = _wait_until(lambda: psutil.Process(orphan).ppid() == os.getpid())
    asyncio.run(stop_tree(leader.pid, grace=1.0))
    leader.wait(timeout=5)
    zombies = [
        child.pid for child in psutil.Process().children() if child.status() == psutil.STATUS_ZOMBIE
    ]
    print(json.dumps({"orphan": orphan, "adopted": adopted, "zombies": zombies}))


def _wait_for_lines(path: Path, count: int) -> list[int]:
    _wait_until(lambda: path.exists() and len(path.read_text().split()) >= count)
    return [int(pid) for pid in path.read_text().split()]


def _wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


if __name__ == "__main__":
    main()

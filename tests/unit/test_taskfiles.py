"""The filesystem observation's kept /proc handles, against real processes."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time

from flowproof.containment.taskfiles import FIRST_READ, TaskFiles


def no_fallback(tid: int, address: int, limit: int) -> bytes | None:
    raise AssertionError("the /proc route was available")


def test_a_string_is_read_whole_short_or_long() -> None:
    short = ctypes.create_string_buffer(b"notes.txt")
    long = ctypes.create_string_buffer(b"d/" * FIRST_READ + b"end")
    files = TaskFiles(no_fallback)
    try:
        assert files.read_string(os.getpid(), ctypes.addressof(short)) == b"notes.txt"
        assert files.read_string(os.getpid(), ctypes.addressof(long)) == b"d/" * FIRST_READ + b"end"
        assert files.read_string(os.getpid(), ctypes.addressof(long), limit=100) is None  # no NUL
        assert files.read_string(os.getpid(), 0) is None
        assert files.read_string(os.getpid(), 8) is None  # page zero is never mapped
    finally:
        files.close()


def test_a_relative_name_resolves_through_the_kept_directory() -> None:
    agent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time; os.chdir('/tmp'); "
            "fd = os.open('/usr', os.O_RDONLY); print(fd, flush=True); sys.stdin.readline(); "
            "os.close(fd); print('closed', flush=True); time.sleep(30)",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    files = TaskFiles(no_fallback)
    try:
        assert agent.stdout is not None and agent.stdin is not None
        directory = int(agent.stdout.readline())
        deadline = time.monotonic() + 10
        while files.readlink(agent.pid, "cwd") != "/tmp":  # once it has changed directory
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert files.readlink(agent.pid, f"fd/{directory}") == "/usr"
        agent.stdin.write("\n")
        agent.stdin.flush()
        assert agent.stdout.readline() == "closed\n"
        assert files.readlink(agent.pid, f"fd/{directory}") is None  # no longer open
    finally:
        agent.kill()
        agent.communicate()  # reaps it and closes both pipes
        files.close()


def test_a_handle_kept_for_a_task_that_has_gone_is_reopened_for_the_live_one() -> None:
    """Stand in for id reuse: the entry kept for one task is put under the id of another.
    Lookups through it fail once its task has gone, and the handles are reopened for the
    task that now has the id."""
    files = TaskFiles(no_fallback)
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    live = subprocess.Popen(
        [sys.executable, "-c", "import os, time; os.chdir('/tmp'); time.sleep(30)"]
    )
    try:
        files.readlink(gone.pid, "cwd")
        files._open[live.pid] = files._open.pop(gone.pid)  # the id now names another task
        gone.kill()
        gone.wait()
        deadline = time.monotonic() + 10
        while files.readlink(live.pid, "cwd") != "/tmp":
            assert time.monotonic() < deadline, "the stale handle was never replaced"
            time.sleep(0.05)
    finally:
        for process in (gone, live):
            process.kill()
            process.wait()
        files.close()


def test_memory_that_cannot_be_opened_falls_back() -> None:
    asked = []

    def fallback(tid: int, address: int, limit: int) -> bytes | None:
        asked.append(tid)
        return b"via process_vm_readv"

    files = TaskFiles(fallback)
    try:
        assert files.read_string(2**22 + 12345, 4096) == b"via process_vm_readv"  # no such task
        assert asked == [2**22 + 12345]
    finally:
        files.close()

"""Each trapping task's /proc files, opened once: the filesystem observation's hot path.

A reported unlink needs the path the agent passed (its memory) and, for a relative path, the
directory it is relative to (`/proc/<tid>/fd/<dirfd>` or `/proc/<tid>/cwd`). Resolving
`/proc/<tid>/...` from the root for every notification, and reading memory through a ctypes
`process_vm_readv`, were most of the handler's cost (an `rm -rf` is one notification per file).
Here each task's `/proc/<tid>` directory and its `mem` file are opened on its first
notification and kept: a lookup is then one path component, and a read is `os.pread`.

Why a kept handle cannot answer for the wrong task: a notification's task is alive (it waits
for our answer), and live tasks have distinct ids. A `/proc/<tid>` directory handle is bound to
the task it was opened for, not to the number, so once that task has gone every lookup through
it fails (ESRCH), and the handle is reopened, now naming the live task with that id. A `mem`
handle is bound to the task's address space: once that is gone a read returns nothing, and the
handle is reopened the same way. (The one case a kept `mem` handle misses: the thread it was
opened for exits, its process lives on, and the pid space wraps around until the same id names
a task of ANOTHER process that then traps. A path read from the wrong address space in a
report, after some four million process starts in one flow.)
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

LIMIT = 256
"""Tasks kept at once; past it every handle is closed and reopened on demand (a flow that
starts thousands of short processes must not hold thousands of descriptors)."""


_GONE = (errno.ENOENT, errno.ESRCH)
"""What a lookup through the directory of a task that has gone fails with (ESRCH), and of a
descriptor that is not open (ENOENT): either way, try once more through a fresh handle."""
FIRST_READ = 256
"""Most paths are short: read this much first, and the rest (up to the limit) only if no NUL
came back."""

StringFallback = Callable[[int, int, int], "bytes | None"]
"""(tid, address, limit) → the NUL-terminated string, by another route (process_vm_readv)."""


class TaskFiles:
    """One receiver thread's handles: `/proc/<tid>` and its `mem`, per task id."""

    def __init__(self, fallback: StringFallback) -> None:
        self._open: dict[int, tuple[int, int]] = {}
        self._fallback = fallback

    def read_string(self, tid: int, address: int, limit: int = 4096) -> bytes | None:
        """The NUL-terminated string at `address` (without the NUL); None when it cannot be
        read or has no NUL within `limit`."""
        if address == 0:
            return None
        entry = self._open.get(tid)
        if entry is not None and entry[1] >= 0:  # the usual case, in as few calls as it takes
            try:
                data = os.pread(entry[1], FIRST_READ, address)
            except (OSError, OverflowError):
                data = b""
            end = data.find(b"\0")
            if end >= 0:
                return data[:end]
        entry = self._entry(tid, fresh=False)
        if entry is None or entry[1] < 0:
            return self._fallback(tid, address, limit)
        data = self._read(tid, address, FIRST_READ) or b""
        end = data.find(b"\0")
        if end < 0 and len(data) == FIRST_READ:
            data += self._read(tid, address + FIRST_READ, limit - FIRST_READ) or b""
            end = data.find(b"\0")
        return data[:end] if end >= 0 else None

    def _read(self, tid: int, address: int, length: int) -> bytes | None:
        """Up to `length` bytes of the task's memory at `address` (a read that runs into an
        unmapped page stops there); None when none of it is mapped."""
        for fresh in (False, True):
            entry = self._entry(tid, fresh)
            if entry is None or entry[1] < 0:
                return None
            try:
                data = os.pread(entry[1], length, address)
            except (OSError, OverflowError):
                return None  # not mapped (EIO), or an address no user page has
            if data:
                return data
        return None  # an address space that has gone, twice: the task is exiting

    def readlink(self, tid: int, name: str) -> str | None:
        """The target of `/proc/<tid>/<name>` (`cwd`, `fd/3`); None when it has none."""
        entry = self._open.get(tid)
        if entry is not None:  # the usual case, in one call
            try:
                return os.readlink(name, dir_fd=entry[0])
            except OSError:
                pass
        for fresh in (False, True):
            entry = self._entry(tid, fresh)
            if entry is None:
                return None
            try:
                return os.readlink(name, dir_fd=entry[0])
            except OSError as exc:
                if exc.errno not in _GONE:
                    return None
        return None  # through a fresh handle too: the descriptor is not open

    def close(self) -> None:
        for directory, memory in self._open.values():
            os.close(directory)
            if memory >= 0:
                os.close(memory)
        self._open.clear()

    def _entry(self, tid: int, fresh: bool) -> tuple[int, int] | None:
        if fresh:
            self._forget(tid)
        entry = self._open.get(tid)
        if entry is not None:
            return entry
        if len(self._open) >= LIMIT:
            self.close()
        try:
            directory = os.open(f"/proc/{tid}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            memory = os.open("mem", os.O_RDONLY | os.O_CLOEXEC, dir_fd=directory)
        except OSError:
            memory = -1  # reads fall back to process_vm_readv
        entry = self._open[tid] = (directory, memory)
        return entry

    def _forget(self, tid: int) -> None:
        entry = self._open.pop(tid, None)
        if entry is not None:
            os.close(entry[0])
            if entry[1] >= 0:
                os.close(entry[1])

"""Filesystem observation: destructive filesystem calls, reported and never stopped.

Every trap here answers CONTINUE, so the call runs as the agent made it; this is a report, not
a control, and it never fails a flow. Because the kernel reads the agent's memory again after
CONTINUE, a sibling thread could change a path between our read and the call: the event (the
trap fires on the call's NUMBER) is certain, the path is best-effort. A path that cannot be read
is shown as `<unresolved>`, never dropped. Ordinary opens never get here: the filter tests
O_TRUNC in the kernel.

This is the hot path of a contained run (an `rm -rf` is one notification per file, and the
agent waits for each answer), so the receiver does only what must happen before the answer:
read the path, resolve a relative one against the directory it is relative to (which the agent
may close right after), answer, and keep the raw facts. Decoding and wording wait for the
report. Where the compiled loop was built (_fsloop.c, by setup.py) it does exactly that for
every call whose shape is paths and flags, in C, and hands the rest back: the Python below is
the reference it follows (`_SHAPES` is its table) and what runs everywhere else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flowproof.containment import _linux
from flowproof.containment.bpf import NR
from flowproof.containment.findings import Findings
from flowproof.containment.fsevents import UNRESOLVED, RawPath
from flowproof.containment.taskfiles import TaskFiles

AT_FDCWD = -100


@dataclass(frozen=True, slots=True)
class _Shape:
    paths: tuple[tuple[int, int | None], ...]
    """(argument holding a path, argument holding its dirfd or None for the cwd), per path."""
    flags: int | None = None
    """The argument holding the flags worth showing."""
    fd: int | None = None
    """The argument holding an fd (ftruncate): its path is read from /proc."""


_SHAPES = {
    NR["unlink"]: _Shape(((0, None),)),
    NR["rmdir"]: _Shape(((0, None),)),
    NR["truncate"]: _Shape(((0, None),)),
    NR["creat"]: _Shape(((0, None),)),
    NR["open"]: _Shape(((0, None),), flags=1),
    NR["unlinkat"]: _Shape(((1, 0),), flags=2),
    NR["openat"]: _Shape(((1, 0),), flags=2),
    NR["openat2"]: _Shape(((1, 0),)),
    NR["rename"]: _Shape(((0, None), (1, None))),
    NR["renameat"]: _Shape(((1, 0), (3, 2))),
    NR["renameat2"]: _Shape(((1, 0), (3, 2)), flags=4),
    NR["ftruncate"]: _Shape((), fd=0),
}
FS_NUMBERS = frozenset(_SHAPES)
_OPENAT2 = NR["openat2"]
_NONE = 0xFF


def _compiled_shapes() -> bytes:
    """`_SHAPES` as the compiled loop reads them: six bytes per x86_64 syscall number below
    512 (how many paths; each path's argument and its dirfd's; the flags' argument; 0xFF for
    none, a dirfd of none meaning the cwd). A count of zero hands the call back to Python:
    ftruncate (a path from an fd) and openat2 (flags in memory) are rare, and stay here."""
    table = bytearray(512 * 6)
    for nr, shape in _SHAPES.items():
        if shape.fd is not None or nr == _OPENAT2:
            continue
        row = [len(shape.paths), _NONE, _NONE, _NONE, _NONE, _NONE]
        for index, (at, dirfd_at) in enumerate(shape.paths):
            row[1 + 2 * index] = at
            row[2 + 2 * index] = _NONE if dirfd_at is None else dirfd_at
        if shape.flags is not None:
            row[5] = shape.flags
        table[nr * 6 : nr * 6 + 6] = bytes(row)
    return bytes(table)


Observe = Callable[[int, bytes, str, list[Any]], tuple[int, bytes | None]]


def _compiled_loop() -> Observe | None:
    try:
        from flowproof.containment._fsloop import observe
    except ImportError:  # not built with this install (no compiler, another OS)
        return None
    return observe


COMPILED_LOOP = _compiled_loop()
"""The compiled receive loop, or None where this install has none (doctor says so)."""
_COMPILED_SHAPES = _compiled_shapes()


def _low_int(value: int) -> int:
    low = value & 0xFFFFFFFF
    return low - (1 << 32) if low & 0x80000000 else low


class FsObserver:
    """The receiver thread's filesystem handler (its buffers and handles are that thread's
    alone); `close` once the supervisor has stopped."""

    def __init__(self, listener: int, findings: Findings) -> None:
        self._files = TaskFiles(_linux.StringReader().read)
        self._responder = _linux.Responder(listener)
        self._findings = findings
        self._compiled = COMPILED_LOOP

    def close(self) -> None:
        self._files.close()

    def receiver(self, listener: int) -> _linux.Receive:
        """The supervisor's receive: with the compiled loop, the filesystem calls it takes are
        observed and answered before it returns, and only the rest (the network calls,
        ftruncate, openat2, a call from another ABI) come back for `handle` and the
        dispatcher. Without it, every notification comes back."""
        observe = self._compiled
        if observe is None:
            return _linux.receiver(listener)
        shapes, findings, unpack = _COMPILED_SHAPES, self._findings, _linux.notification

        def receive() -> _linux.Notification | int:
            while True:
                try:
                    code, raw = observe(listener, shapes, UNRESOLVED, findings.fs_raw)
                except MemoryError:  # making the event, after its answer: only it is lost
                    findings.fault("filesystem observation: out of memory for an event")
                    continue
                return code if raw is None else unpack(raw)

        return receive

    def handle(self, notif: _linux.Notification) -> None:
        nr = notif.nr
        shape = _SHAPES[nr]
        args = notif[6:]  # notif.args, less a Python frame
        tid = notif.pid
        flags = _low_int(args[shape.flags]) if shape.flags is not None else 0
        if nr == _OPENAT2:  # its flags are in memory: struct open_how
            how = _linux.read_memory(tid, args[2], 8)
            if len(how) < 8:
                self._findings.fault("openat2 whose open_how could not be read")
                self._responder.proceed(notif.id)
                return
            flags = int.from_bytes(how, "little")
            if not flags & os.O_TRUNC:
                self._responder.proceed(notif.id)
                return
        files = self._files
        paths: list[RawPath] = []
        if shape.fd is not None:
            paths.append((None, files.readlink(tid, f"fd/{args[0] & 0xFFFFFFFF}")))
        for at, dirfd_at in shape.paths:
            raw = files.read_string(tid, args[at])
            base = None
            if raw is not None and raw[:1] != b"/":
                # Resolved now, before the answer: the agent may close that directory next.
                dirfd = AT_FDCWD if dirfd_at is None else _low_int(args[dirfd_at])
                where = "cwd" if dirfd == AT_FDCWD else f"fd/{dirfd}"
                base = files.readlink(tid, where) or UNRESOLVED
            paths.append((raw, base))
        # No ID_VALID: an answer to a task that has gone fails, which says the same, and then
        # the facts (read from whatever now has that pid) are dropped.
        if self._responder.proceed(notif.id):
            self._findings.fs_raw.append((nr, flags, tuple(paths), time.monotonic()))

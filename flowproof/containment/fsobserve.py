"""Filesystem observation: destructive filesystem calls, reported and never stopped.

Every trap here answers CONTINUE, so the call runs as the agent made it; this is a report, not
a control, and it never fails a flow. Because the kernel reads the agent's memory again after
CONTINUE, a sibling thread could change a path between our read and the call: the event (the
trap fires on the call's NUMBER) is certain, the path is best-effort. A path that cannot be read
is shown as `<unresolved>`, never dropped. Ordinary opens never get here: the filter tests
O_TRUNC in the kernel.
"""

from __future__ import annotations

import os
import stat

from flowproof.containment import _linux
from flowproof.containment.supervisor import Call, Handler, Supervisor

AT_FDCWD = -100
AT_REMOVEDIR = 0x200
UNRESOLVED = "<unresolved>"
_ACCESS = {os.O_RDONLY: "O_RDONLY", os.O_WRONLY: "O_WRONLY", os.O_RDWR: "O_RDWR"}
_OPEN_FLAGS = (
    (os.O_CREAT, "O_CREAT"),
    (os.O_EXCL, "O_EXCL"),
    (os.O_TRUNC, "O_TRUNC"),
    (os.O_APPEND, "O_APPEND"),
)
_OPENS = ("open", "openat", "openat2", "creat", "truncate")
_RENAME_FLAGS = ((1, "RENAME_NOREPLACE"), (2, "RENAME_EXCHANGE"), (4, "RENAME_WHITEOUT"))


def open_flags(flags: int) -> str:
    names = [_ACCESS.get(flags & os.O_ACCMODE, "O_ACCMODE")]
    names += [name for bit, name in _OPEN_FLAGS if flags & bit]
    return f"[{'|'.join(names)}]"


def _path(call: Call, pointer: int, dirfd: int = AT_FDCWD) -> str:
    raw = _linux.read_string(call.tid, pointer)
    if raw is None:
        return UNRESOLVED
    path = os.fsdecode(raw)
    if path.startswith("/"):
        return path
    base = f"/proc/{call.tid}/cwd" if dirfd == AT_FDCWD else f"/proc/{call.tid}/fd/{dirfd}"
    try:
        return os.path.normpath(os.path.join(os.readlink(base), path))
    except OSError:
        return f"{UNRESOLVED}/{path}"


def _fd_path(call: Call, fd: int) -> str:
    try:
        return os.readlink(f"/proc/{call.tid}/fd/{fd}")
    except OSError:
        return UNRESOLVED


def _event(call: Call) -> tuple[str, tuple[str, ...]] | None:
    """(flags text, paths) of a destructive call; None for an openat2 that truncates nothing."""
    a = call.args
    name = call.name
    if name in ("unlink", "rmdir", "truncate", "creat"):
        return "", (_path(call, a[0]),)
    if name == "unlinkat":
        flags = "[AT_REMOVEDIR]" if call.int_arg(2) & AT_REMOVEDIR else ""
        return flags, (_path(call, a[1], call.int_arg(0)),)
    if name == "rename":
        return "", (_path(call, a[0]), _path(call, a[1]))
    if name in ("renameat", "renameat2"):
        paths = (_path(call, a[1], call.int_arg(0)), _path(call, a[3], call.int_arg(2)))
        bits = call.int_arg(4) if name == "renameat2" else 0
        names = [text for bit, text in _RENAME_FLAGS if bits & bit]
        return (f"[{'|'.join(names)}]" if names else ""), paths
    if name == "ftruncate":
        return "", (_fd_path(call, call.int_arg(0)),)
    if name == "open":
        return open_flags(call.int_arg(1)), (_path(call, a[0]),)
    if name == "openat":
        return open_flags(call.int_arg(2)), (_path(call, a[1], call.int_arg(0)),)
    if name == "openat2":
        how = call.read(a[2], 8)
        if len(how) < 8:
            raise OSError("openat2 whose open_how could not be read")
        how_flags = int.from_bytes(how, "little")
        if not how_flags & os.O_TRUNC:
            return None
        return open_flags(how_flags), (_path(call, a[1], call.int_arg(0)),)
    return "", ()


def _harmless(path: str) -> bool:
    """Truncating a device or a fifo (`> /dev/null`) destroys nothing."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def on_destructive(call: Call, sup: Supervisor) -> None:
    try:
        event = _event(call)
    except OSError as exc:
        sup.findings.fault(str(exc))  # a call whose destructiveness could not be told
        event = None
    if event is not None and call.name in _OPENS and _harmless(event[1][0]):
        event = None
    still_waiting = call.valid()
    call.proceed()
    if event is not None and still_waiting:
        flags, paths = event
        sup.findings.observe(call.name, flags, paths)


HANDLERS: dict[str, Handler] = {
    name: on_destructive
    for name in (
        "unlink",
        "unlinkat",
        "rmdir",
        "rename",
        "renameat",
        "renameat2",
        "truncate",
        "ftruncate",
        "creat",
        "openat2",
        "open",
        "openat",
    )
}

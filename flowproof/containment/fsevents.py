"""The filesystem observation's facts as plain values: the raw tuple the receive loop
appends for each destructive call, and the worded `FsEvent` the report prints. Pure (no
supervisor, no threads), so the findings and the observer both read it without reading
each other."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from flowproof.containment.bpf import NAMES

AT_REMOVEDIR = 0x200
UNRESOLVED = "<unresolved>"
_ACCESS = {os.O_RDONLY: "O_RDONLY", os.O_WRONLY: "O_WRONLY", os.O_RDWR: "O_RDWR"}
_OPEN_FLAGS = (
    (os.O_CREAT, "O_CREAT"),
    (os.O_EXCL, "O_EXCL"),
    (os.O_TRUNC, "O_TRUNC"),
    (os.O_APPEND, "O_APPEND"),
)
_RENAME_FLAGS = ((1, "RENAME_NOREPLACE"), (2, "RENAME_EXCHANGE"), (4, "RENAME_WHITEOUT"))
_OPENS = ("open", "openat", "openat2", "creat", "truncate")


@dataclass(frozen=True, slots=True)
class FsEvent:
    """One destructive filesystem call, as an ATTEMPT: the reply goes out before it runs."""

    call: str
    flags: str
    """`[O_WRONLY|O_CREAT|O_TRUNC]`, `[AT_REMOVEDIR]`; empty when there is nothing to say."""
    paths: tuple[str, ...]
    """Absolute where they could be resolved; `<unresolved>` where the path was unreadable."""
    at: float
    """Seconds since the agent started."""

    def __str__(self) -> str:
        flags = f" {self.flags}" if self.flags else ""
        return f"{self.call}{flags} {' -> '.join(self.paths)} at {round(self.at * 1000)}ms"


RawPath = tuple[bytes | None, str | None]
"""(the path as read, or None when unreadable; the directory a relative one is relative to)."""


RawFsEvent = tuple[int, int, tuple[RawPath, ...], float]
"""(syscall number, its flags, its paths, when): a plain tuple, made once per notification."""


def open_flags(flags: int) -> str:
    names = [_ACCESS.get(flags & os.O_ACCMODE, "O_ACCMODE")]
    names += [name for bit, name in _OPEN_FLAGS if flags & bit]
    return f"[{'|'.join(names)}]"


def describe(event: RawFsEvent, started: float) -> FsEvent | None:
    """The event as the report words it; None for one that destroyed nothing (a truncating
    open of a device or a fifo, `> /dev/null`)."""
    nr, raw_flags, raw_paths, at = event
    name = NAMES[nr]
    paths = tuple(_text(raw, base) for raw, base in raw_paths)
    if name in _OPENS and _harmless(paths[0]):
        return None
    flags = ""
    if name in ("open", "openat", "openat2"):
        flags = open_flags(raw_flags)
    elif name == "unlinkat" and raw_flags & AT_REMOVEDIR:
        flags = "[AT_REMOVEDIR]"
    elif name == "renameat2":
        names = [text for bit, text in _RENAME_FLAGS if raw_flags & bit]
        flags = f"[{'|'.join(names)}]" if names else ""
    return FsEvent(name, flags, paths, at - started)


def _text(raw: bytes | None, base: str | None) -> str:
    if raw is None:
        return base or UNRESOLVED
    path = os.fsdecode(raw)
    if base is None:
        return path
    return os.path.normpath(os.path.join(base, path))


def _harmless(path: str) -> bool:
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False

"""The only ctypes module: Linux system calls the standard library does not wrap."""

from __future__ import annotations

import ctypes

PR_SET_CHILD_SUBREAPER = 36
"""prctl option (linux/prctl.h, since Linux 3.4): orphans below us are re-parented to us
instead of to init. Unprivileged, and not inherited across fork."""


def set_child_subreaper() -> bool:
    """prctl(PR_SET_CHILD_SUBREAPER, 1); False when the kernel or a sandbox refuses it."""
    try:
        # CDLL(None) is the running process's own symbol table, where glibc and musl both
        # export prctl; no library has to be found on disk.
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return bool(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)

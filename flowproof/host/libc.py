"""The running process's C library, through ctypes: loaded once, for the calls the standard
library does not wrap (prctl here; the system calls of containment/_linux.py)."""

from __future__ import annotations

import ctypes
import os
from functools import cache


@cache
def libc() -> ctypes.CDLL:
    # CDLL(None) is the running process's own symbol table, where glibc and musl both export
    # these; no library has to be found on disk, which is what lets the frozen engine use it.
    return ctypes.CDLL(None, use_errno=True)


def prctl(option: int, arg: int = 0) -> int:
    function = libc().prctl
    # All five: PR_SET_NO_NEW_PRIVS is EINVAL unless arg3..arg5 are zero, and an argument
    # not passed is whatever the register held.
    function.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
    function.restype = ctypes.c_int
    result = int(function(option, arg, 0, 0, 0))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result

"""The environment the user started flowproof in, as the agents it starts must see it.

Frozen, the PyInstaller bootloader changes its own environment before flowproof runs: on Linux
it points LD_LIBRARY_PATH at the bundle's `_internal/` (saving a value the user had in
LD_LIBRARY_PATH_ORIG) and adds `_PYI_*` bookkeeping variables. Inherited, those would make an
agent's `node` or `python3` load the bundle's copies of libstdc++, libssl or libz, built for
the release's oldest glibc, instead of the system's (`GLIBCXX_... not found`), and confuse an
agent that is itself a PyInstaller program. Every process flowproof starts gets
`host_environ(...)` instead. From source nothing is changed: there the user's LD_LIBRARY_PATH is
the user's.

This module is also the one place below the command line that reads flowproof's own
environment (`own_environ`): every flow takes a snapshot of it as it opens (engine/front.py),
and everything after reads the snapshot, so nothing that changes `os.environ` mid-run moves
what a flow sees.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

LOADER_PATHS = ("LD_LIBRARY_PATH", "LIBPATH", "DYLD_LIBRARY_PATH")
"""The dynamic-loader search paths a PyInstaller bootloader may set (Linux, AIX, macOS)."""


def own_environ() -> dict[str, str]:
    """flowproof's own environment, as it is now: a copy."""
    return dict(os.environ)


@contextmanager
def lent(variables: Mapping[str, str]) -> Iterator[None]:
    """flowproof's own environment with `variables` set, for the block (an in-process agent
    reads its wiring from there), then as it was: a variable that was unset is unset again."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def host_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with the bootloader's changes undone when frozen; a plain copy otherwise."""
    env = dict(environ)
    if not getattr(sys, "frozen", False):
        return env
    for name in [name for name in env if name.startswith("_PYI_")]:
        del env[name]
    for name in LOADER_PATHS:
        original = env.pop(f"{name}_ORIG", None)
        if original is not None:
            env[name] = original
        else:
            env.pop(name, None)
    return env

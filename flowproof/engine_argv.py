"""The one place that spells how to start this same engine again.

The MCP stdio stand-in and the containment supervisor run as child processes of the engine.
Whether flowproof runs from source (`python -m flowproof`), from an installed console script or
as the frozen PyInstaller bundle shipped through npm, the install script and the GitHub Action,
the child must be the *same* engine, so every re-invocation asks `engine_argv()` and nothing
else names the interpreter (ruff bans `sys.executable` outside this module; a unit test bans the
spelling `-m flowproof`).
"""

from __future__ import annotations

import sys


def engine_argv() -> list[str]:
    """The argv prefix that starts this engine; append the subcommand and its arguments.

    Frozen (PyInstaller sets `sys.frozen`), `sys.executable` is the bundle's own executable,
    which takes flowproof's arguments directly. Otherwise it is the interpreter running
    flowproof, which starts the same package with `-m flowproof` (its `sys.path` comes from the
    environment the child inherits, PYTHONPATH included).

    Give the child `flowproof.host_environ.host_environ(os.environ)` (plus what it needs), not
    the bootloader's environment, so a frozen child starts as fresh as its parent did.
    """
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "flowproof"]

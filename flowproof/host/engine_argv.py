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
from pathlib import Path

SOURCE_ROOT = str(Path(__file__).resolve().parents[2])
"""The directory holding this `flowproof` package (a checkout, or site-packages)."""
BOOTSTRAP = (
    "import runpy,sys;sys.path.insert(0,sys.argv.pop(1));"
    "runpy.run_module('flowproof',run_name='__main__',alter_sys=True)"
)
"""Runs this package from SOURCE_ROOT, whatever the child's environment and working directory."""


def engine_argv() -> list[str]:
    """The argv prefix that starts this engine; append the subcommand and its arguments.

    Frozen (PyInstaller sets `sys.frozen`), `sys.executable` is the bundle's own executable,
    which takes flowproof's arguments directly. Otherwise it is the interpreter running
    flowproof, told where this package lives: `python -m flowproof` would find the package
    through PYTHONPATH or the working directory, and the MCP SDKs start a stdio server (the
    stand-in) with neither (they pass it only HOME, LOGNAME, PATH, SHELL, TERM and USER), so
    a checkout run from source would start some other installed flowproof, or none.

    Give the child `flowproof.host.environ.host_environ(os.environ)` (plus what it needs), not
    the bootloader's environment, so a frozen child starts as fresh as its parent did.
    """
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-c", BOOTSTRAP, SOURCE_ROOT]

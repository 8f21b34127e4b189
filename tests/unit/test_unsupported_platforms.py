"""The engine on Windows stops at its entry with exit 2 and says where it does run (WSL):
the command driver starts agents with /bin/sh and process groups, which Windows lacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

WINDOWS = (
    "error: Windows is not supported yet; run flowproof in WSL (Windows Subsystem for Linux), "
    "where the Linux build runs\n"
)


def run_entry(platform: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI entry (what the console script and the frozen engine call), with
    sys.platform set after click is imported, as it would read on that platform."""
    probe = (
        "import sys\n"
        "from flowproof.cli import main\n"
        f"sys.platform = {platform!r}\n"
        f"sys.argv = ['flowproof', *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


@pytest.mark.parametrize("args", [("run", "specs/"), ("record", "specs/"), ("--version",), ()])
def test_windows_exits_2_naming_wsl_before_any_command(args: tuple[str, ...]) -> None:
    done = run_entry("win32", *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", WINDOWS)


def test_the_same_entry_runs_elsewhere() -> None:
    done = run_entry(sys.platform, "--version")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("flowproof ")

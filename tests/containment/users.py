"""Running a test's child process as an unprivileged user (setpriv), with an interpreter that
user can reach."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig

import pytest

from tests.conftest import ROOT

NOBODY = "65534"


def as_nobody() -> tuple[str, ...]:
    """The argv prefix that runs a command as nobody, with no groups and no capabilities."""
    return ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--")


def interpreter(*as_user: str) -> tuple[str, ...]:
    """This interpreter, or (when the user cannot reach it, e.g. under /root) the system's
    python of the same minor version with this environment's packages on its path."""
    probe = subprocess.run([*as_user, "env", sys.executable, "-c", "pass"], capture_output=True)
    if probe.returncode == 0:
        return ("env", f"PYTHONPATH={ROOT}", sys.executable)
    system = shutil.which("python3", path="/usr/bin:/bin")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if (
        system is None
        or not subprocess.run(
            [system, "-c", f"import sys; assert '%d.%d' % sys.version_info[:2] == '{version}'"],
            capture_output=True,
        ).returncode
        == 0
    ):
        pytest.skip("no interpreter the unprivileged user can run")
    packages = sysconfig.get_paths()["purelib"]
    return ("env", f"PYTHONPATH={ROOT}:{packages}", system)

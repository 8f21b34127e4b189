"""The escape battery (tests/containment/battery.py), as root and as an unprivileged user,
each run in a network namespace of its own. Every technique is a separate real child process:
Python, C compiled here with gcc, or curl."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.containment import netns
from tests.containment.users import NOBODY, as_nobody, interpreter

pytestmark = pytest.mark.skipif(bool(netns.available()), reason=netns.available() or "ok")
SOURCES = ROOT / "tests" / "containment" / "c"


@pytest.fixture(scope="module")
def programs() -> Iterator[Path]:
    """The C techniques, compiled (a technique whose program is missing is reported skipped),
    where an unprivileged user can run them."""
    out = Path(tempfile.mkdtemp(prefix="flowproof-battery-"))
    out.chmod(0o755)
    if shutil.which("gcc"):
        for source in SOURCES.glob("*.c"):
            subprocess.run(
                ["gcc", "-O1", "-pthread", "-o", str(out / source.stem), str(source)],
                check=True,
                capture_output=True,
            )
    yield out
    shutil.rmtree(out)


def run_battery(programs: Path, *as_user: str) -> subprocess.CompletedProcess[str]:
    setup = (
        "set -e; ip link set lo up; "
        f"for a in {netns.DECLARED}/32 {netns.UNDECLARED}/32; "
        'do ip addr add "$a" dev lo; done; '
        # nodad: usable at once, not "tentative" while duplicate detection runs
        "for a in 2001:db8::9/128 2001:db8::7/128; "
        'do ip addr add "$a" dev lo nodad; done; exec "$@"'
    )
    return subprocess.run(
        [
            "unshare",
            "-n",
            "sh",
            "-c",
            setup,
            "sh",
            *as_user,
            *interpreter(*as_user),
            "-m",
            "tests.containment.battery",
            str(programs),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_every_escape_is_refused_and_reported_as_root(programs: Path) -> None:
    done = run_battery(programs)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "escape battery as uid 0 " in done.stdout and "\n0 misses" in done.stdout


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_every_escape_is_refused_and_reported_unprivileged(programs: Path) -> None:
    done = run_battery(programs, *as_nobody())
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        f"escape battery as uid {NOBODY} (CapEff 0000000000000000)" in done.stdout
        and "\n0 misses" in done.stdout
    )
    assert os.geteuid() == 0  # the namespace was made as root; the battery ran as nobody

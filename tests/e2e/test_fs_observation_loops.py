"""The compiled filesystem receive loop (containment/_fsloop.c) against the Python one it
follows (fsobserve.py): one real agent under real containment (tests/containment/fs_loops.py),
observed once by each, as root and as an unprivileged user, must be reported the same, call for
call, with the network calls and the calls the compiled loop hands back (ftruncate, openat2)
still answered by Python in between."""

from __future__ import annotations

import json
import platform
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowproof.containment import fsobserve
from flowproof.containment.probe import capability, containment_report
from tests.conftest import ROOT
from tests.containment.users import as_nobody, interpreter

pytestmark = pytest.mark.skipif(
    not capability().contained, reason=f"this host gives {capability().tier}"
)
X86_64_ONLY = pytest.mark.skipif(
    platform.machine() != "x86_64", reason="the compiled loop is built on x86_64 Linux only"
)


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            connection.close()

    threading.Thread(target=accept, daemon=True).start()
    yield int(server.getsockname()[1])
    server.close()


def expected(root: str) -> list[list[Any]]:
    tree = f"{root}/tree"
    return [
        # the rm -rf, in the directories' own order (compared as a set)
        ["unlinkat", "", [f"{tree}/a.txt"]],
        ["unlinkat", "", [f"{tree}/sub/b.txt"]],
        ["unlinkat", "", [f"{tree}/sub/deeper/c.txt"]],
        ["unlinkat", "[AT_REMOVEDIR]", [f"{tree}/sub/deeper"]],
        ["unlinkat", "[AT_REMOVEDIR]", [f"{tree}/sub"]],
        ["unlinkat", "[AT_REMOVEDIR]", [tree]],
        # then in the agent's order
        ["openat", "[O_WRONLY|O_CREAT|O_TRUNC]", [f"{root}/kept.txt"]],
        ["rename", "", [f"{root}/moved", f"{root}/renamed"]],
        ["ftruncate", "", [f"{root}/renamed"]],
        ["openat2", "[O_WRONLY|O_TRUNC]", [f"{root}/renamed"]],
        ["unlink", "", [f"{root}/renamed"]],
        ["truncate", "", [f"{root}/kept.txt"]],
    ]


def both_loops(root: Path, port: int, *as_user: str) -> dict[str, Any]:
    root.mkdir(exist_ok=True)
    root.chmod(0o777)
    done = subprocess.run(
        [
            *as_user,
            *interpreter(*as_user),
            "-m",
            "tests.containment.fs_loops",
            str(root),
            str(port),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return report


def assert_the_same_report(report: dict[str, Any], root: Path, port: int) -> None:
    for loop, seen in report["loops"].items():
        assert seen["exit"] == 0, (loop, seen["stderr"])
        want, got = expected(str(root / loop)), seen["events"]
        assert sorted(got[:6]) == sorted(want[:6]), (loop, got)
        assert got[6:] == want[6:], (loop, got)
        assert seen["times"] == sorted(seen["times"]), loop
        assert seen["local"] == {f"127.0.0.1:{port}": 1}, (loop, seen["local"])
        assert seen["faults"] == [], loop
    compiled, python = (
        [
            [call, flags, [p.replace(str(root / loop), "ROOT") for p in paths]]
            for call, flags, paths in report["loops"][loop]["events"]
        ]
        for loop in ("compiled", "python")
    )
    assert compiled == python


@X86_64_ONLY
def test_the_compiled_loop_is_built_with_this_install() -> None:
    assert fsobserve.COMPILED_LOOP is not None, (
        "flowproof/containment/_fsloop.c was not built: `make install` (setup.py) needs gcc "
        "and the Python headers"
    )


def test_both_loops_report_the_same_calls(tmp_path: Path, listener: int) -> None:
    report = both_loops(tmp_path / "root", listener)
    assert report["uid"] == 0 and report["built"] == (fsobserve.COMPILED_LOOP is not None)
    assert_the_same_report(report, tmp_path / "root", listener)


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_both_loops_report_the_same_calls_unprivileged(listener: int) -> None:
    # Not under tmp_path: pytest's own temporary root is root's alone (0700).
    outside = Path(tempfile.mkdtemp(prefix="flowproof-fs-loops-"))
    try:
        outside.chmod(0o755)
        report = both_loops(outside / "nobody", listener, *as_nobody())
        assert report["uid"] != 0 and report["built"] == (fsobserve.COMPILED_LOOP is not None)
        assert_the_same_report(report, outside / "nobody", listener)
    finally:
        shutil.rmtree(outside)


@X86_64_ONLY
def test_doctor_says_when_this_install_has_no_compiled_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    note = "the compiled filesystem loop (containment/_fsloop.c) was not built with this install"
    capability.cache_clear()
    assert note not in containment_report()
    monkeypatch.setattr(fsobserve, "COMPILED_LOOP", None)
    capability.cache_clear()
    try:
        report = containment_report()
    finally:
        capability.cache_clear()
    assert f"note: {note}: filesystem observation runs in Python" in report
    assert "contained (linux seccomp)" in report  # slower, never less contained

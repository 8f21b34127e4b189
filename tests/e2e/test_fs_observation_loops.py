"""The compiled filesystem receive loop (containment/_fsloop.c) against the Python one it
follows (fsobserve.py): one real agent under real containment, run once with each, must be
reported the same, call for call, with the network calls and the calls the compiled loop hands
back (ftruncate, openat2) still answered by Python in between."""

from __future__ import annotations

import asyncio
import os
import platform
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowproof.containment import fsobserve
from flowproof.containment.findings import Findings, FsEvent
from flowproof.containment.pins import PinnedPolicy
from flowproof.containment.policy import Policy
from flowproof.containment.probe import capability, containment_report
from flowproof.containment.session import Supervision
from flowproof.drivers.command import run_command
from flowproof.drivers.launch import SeccompLauncher

pytestmark = pytest.mark.skipif(
    not capability().contained, reason=f"this host gives {capability().tier}"
)

AGENT = textwrap.dedent("""\
    import ctypes, os, shutil, socket, subprocess, sys
    root, port = sys.argv[1], int(sys.argv[2])
    os.makedirs(f"{root}/tree/sub/deeper")
    for name in ("tree/a.txt", "tree/sub/b.txt", "tree/sub/deeper/c.txt", "kept.txt", "moved"):
        open(f"{root}/{name}", "x").write("x")  # O_EXCL, no O_TRUNC: silent
    subprocess.run(["rm", "-rf", f"{root}/tree"], check=True)   # unlinkat, relative to its fds
    socket.create_connection(("127.0.0.1", port)).close()       # a network call, in between
    open(f"{root}/kept.txt", "w").close()                       # openat O_TRUNC
    open(f"{root}/kept.txt", "a").close()                       # an append: silent
    os.chdir(root)
    os.rename("moved", "renamed")                               # rename, relative to the cwd
    with open("renamed", "r+") as handle:
        os.ftruncate(handle.fileno(), 0)                        # handed back: a path from an fd
    libc = ctypes.CDLL(None, use_errno=True)
    how = (ctypes.c_uint64 * 3)(os.O_WRONLY | os.O_TRUNC, 0, 0)
    fd = libc.syscall(437, -100, b"renamed", how, 24)           # openat2 O_TRUNC: handed back
    os.close(fd)
    os.unlink("renamed")                                         # unlink, relative
    os.truncate(f"{root}/kept.txt", 0)                          # truncate
    print("done")
    """)


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


def observed(root: Path, port: int) -> tuple[Findings, list[FsEvent]]:
    findings = Findings()
    launcher = SeccompLauncher(Supervision(PinnedPolicy(Policy((), {})), findings))
    command = f"{sys.executable} -c {_quoted(AGENT)} {root} {port}"
    outcome = asyncio.run(run_command(command, dict(os.environ), 60.0, asyncio.Event(), launcher))
    assert outcome.exit_code == 0, outcome.stderr_tail
    return findings, findings.fs_events()


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def expected(root: Path) -> list[tuple[str, str, tuple[str, ...]]]:
    tree = f"{root}/tree"
    return [
        # rm -rf's order within a directory is the directory's; compared as a set below
        ("unlinkat", "", (f"{tree}/a.txt",)),
        ("unlinkat", "", (f"{tree}/sub/b.txt",)),
        ("unlinkat", "", (f"{tree}/sub/deeper/c.txt",)),
        ("unlinkat", "[AT_REMOVEDIR]", (f"{tree}/sub/deeper",)),
        ("unlinkat", "[AT_REMOVEDIR]", (f"{tree}/sub",)),
        ("unlinkat", "[AT_REMOVEDIR]", (tree,)),
        ("openat", "[O_WRONLY|O_CREAT|O_TRUNC]", (f"{root}/kept.txt",)),
        ("rename", "", (f"{root}/moved", f"{root}/renamed")),
        ("ftruncate", "", (f"{root}/renamed",)),
        ("openat2", "[O_WRONLY|O_TRUNC]", (f"{root}/renamed",)),
        ("unlink", "", (f"{root}/renamed",)),
        ("truncate", "", (f"{root}/kept.txt",)),
    ]


def shape(events: list[FsEvent]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(event.call, event.flags, event.paths) for event in events]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the compiled loop is x86_64 Linux")
def test_the_compiled_loop_is_built_with_this_install() -> None:
    assert fsobserve.COMPILED_LOOP is not None, (
        "flowproof/containment/_fsloop.c was not built: `make install` (setup.py) needs gcc "
        "and the Python headers"
    )


def test_both_loops_report_the_same_calls(
    tmp_path: Path, listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "compiled").mkdir()
    (tmp_path / "python").mkdir()
    compiled_findings, compiled = observed(tmp_path / "compiled", listener)
    monkeypatch.setattr(fsobserve, "COMPILED_LOOP", None)
    python_findings, python = observed(tmp_path / "python", listener)

    for root, events, findings in (
        (tmp_path / "compiled", compiled, compiled_findings),
        (tmp_path / "python", python, python_findings),
    ):
        want = expected(root)
        got = shape(events)
        assert sorted(got[:6]) == sorted(want[:6]), got  # the rm -rf
        assert got[6:] == want[6:], got
        assert findings.local == {f"127.0.0.1:{listener}": 1}, findings.local
        assert findings.faults == []
        assert [event.at for event in events] == sorted(event.at for event in events)
    relative = [
        [
            (call, flags, tuple(p.replace(str(root), "ROOT") for p in paths))
            for call, flags, paths in x
        ]
        for root, x in (
            (tmp_path / "compiled", shape(compiled)),
            (tmp_path / "python", shape(python)),
        )
    ]
    assert relative[0] == relative[1]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the compiled loop is x86_64 Linux")
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

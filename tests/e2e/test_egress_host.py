"""Egress containment on this host: filesystem observation, doctor's tier, nesting, the warning
for allow_egress where nothing enforces it, and failing closed when the supervisor is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, flowproof
from tests.containment import netns
from tests.e2e.booking import KEY

pytestmark = pytest.mark.skipif(bool(netns.available()), reason=netns.available() or "ok")
AGENT = ROOT / "tests" / "containment" / "egress_agent.py"


def write_spec(directory: Path, before: str) -> None:
    """The egress booking flow, whose command first runs the shell line `before`."""
    command = f"{before}; exec {sys.executable} {AGENT}"
    spec = textwrap.dedent(f"""\
        name: Booking agent that tidies up first
        app: agent
        agent:
          command: {json.dumps(command)}
        tools:
          - name: search_flights
            result: {{ flights: [ {{ id: KQ311, dest: NBO }} ] }}
          - name: create_booking
        steps:
          - prompt: Book me a flight to Nairobi tomorrow
          - assert_no_egress
        """)
    (directory / "specs").mkdir(exist_ok=True)
    (directory / "specs" / "fs.yaml").write_text(spec)


def record(directory: Path) -> subprocess.CompletedProcess[str] | object:
    ready = directory / "ready"
    ready.unlink(missing_ok=True)
    return flowproof(
        "record",
        "specs",
        cwd=directory,
        env={"FLOWPROOF_AGENT_KEY": KEY},
        prefix=netns.prefix(ready),
    )


def test_a_run_that_destroys_files_is_reported(tmp_path: Path) -> None:
    tree, kept = tmp_path / "tree", tmp_path / "kept.txt"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_text("a")
    (tree / "sub" / "b.txt").write_text("b")
    kept.write_text("precious")
    write_spec(tmp_path, f"rm -rf {tree}; echo clobbered > {kept}")
    result = record(tmp_path)
    assert result.code == 0, result.output
    report = result.stderr[result.stderr.index("filesystem observation:") :]
    assert report.startswith("filesystem observation: observed (linux seccomp); ")
    assert f"unlinkat {tree}/a.txt at " in report
    assert f"unlinkat {tree}/sub/b.txt at " in report
    assert f"unlinkat [AT_REMOVEDIR] {tree}/sub at " in report
    assert f"unlinkat [AT_REMOVEDIR] {tree} at " in report
    assert f"openat [O_WRONLY|O_CREAT|O_TRUNC] {kept} at " in report
    assert not tree.exists() and kept.read_text() == "clobbered\n"  # observed, never stopped
    # Never recorded: neither the trace nor the run record holds a path it reported.
    assert str(tree) not in (tmp_path / "specs" / "fs.trace.json").read_text()
    for record_file in (tmp_path / ".flowproof").rglob("report.json"):
        assert str(tree) not in record_file.read_text()


def test_reads_and_appends_are_silent(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("one\n")
    write_spec(tmp_path, f"cat {log} > /dev/null; echo two >> {log}; ls {tmp_path} > /dev/null")
    result = record(tmp_path)
    assert result.code == 0, result.output
    assert "filesystem observation" not in result.stderr
    assert log.read_text() == "one\ntwo\n"


def test_doctor_reports_the_tier_this_host_gives(tmp_path: Path) -> None:
    result = flowproof("doctor", "--agent", "true", cwd=tmp_path)
    assert "Egress containment on this host: contained (linux seccomp)." in result.stderr


def harness(*command: str, allow: tuple[str, ...] = ()) -> dict:
    allowed = [argument for entry in allow for argument in ("--allow", entry)]
    done = subprocess.run(
        [sys.executable, "-m", "tests.containment.harness", *allowed, "--", *command],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_flowproof_under_its_own_containment_cannot_contain(tmp_path: Path) -> None:
    """A second notifier in one filter stack is EBUSY: doctor inside a contained agent says
    so, and does not claim a tier it cannot give."""
    inner = harness(sys.executable, "-m", "flowproof", "doctor", "--agent", "true")
    assert (
        "Egress containment on this host: not contained (flowproof already runs under another "
        "seccomp notifier (a container runtime's, a sandbox's or flowproof's own), and the "
        "kernel allows one per filter stack)."
    ) in inner["stderr"]


def test_trapped_calls_fail_closed_when_the_supervisor_is_gone(tmp_path: Path) -> None:
    """The agent outlives a SIGKILLed flowproof (it was told to ignore everything): its next
    connect does not reach the kernel's network at all, it fails with ENOSYS."""
    marker = tmp_path / "after.txt"
    child = (
        "import os, signal, socket, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "os.setsid() if os.fork() == 0 else os._exit(0)\n"
        f"open({str(marker)!r} + '.ready', 'w').close(); time.sleep(2)\n"
        "s = socket.socket()\n"
        "try:\n    s.connect(('127.0.0.1', 9)); outcome = 'connected'\n"
        "except OSError as e:\n    outcome = str(e.errno)\n"
        # 'a', not 'w': an O_TRUNC open is trapped too, and would fail with ENOSYS as well.
        f"open({str(marker)!r}, 'a').write(outcome)\n"
    )
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "tests.containment.harness", "--", sys.executable, "-c", child],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not Path(str(marker) + ".ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    supervisor.send_signal(signal.SIGKILL)
    supervisor.wait()
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == "38"  # ENOSYS: no supervisor, no network call


def test_a_contained_agent_runs_in_its_declared_cwd(tmp_path: Path) -> None:
    """agent.cwd under containment: the trampoline changes directory just before exec, and a
    relative path the agent truncates is reported against that directory."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("old")
    write_spec(tmp_path, "echo new > notes.txt")
    spec = tmp_path / "specs" / "fs.yaml"
    spec.write_text(spec.read_text().replace("agent:\n", "agent:\n  cwd: ../workspace\n", 1))
    result = record(tmp_path)
    assert result.code == 0, result.output
    assert (workspace / "notes.txt").read_text() == "new\n"
    assert f"openat [O_WRONLY|O_CREAT|O_TRUNC] {workspace}/notes.txt at " in result.stderr

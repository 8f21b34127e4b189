"""Process supervision with real agents and the real CLI: nothing an agent does to its output
or its process tree, and no signal sent to flowproof, can make flowproof hang or leave a
process behind.

Each test bounds its own run well under 30 s; a hang shows up as a subprocess timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from aiohttp import web

from tests.conftest import ENGINE_VARIABLE, ROOT, engine_command
from tests.e2e.booking import BOOKING_SCRIPT, KEY, record, write_spec
from tests.upstream.scripted import Received, ScriptedUpstream

GONE_WITHIN = 5.0
"""How long flowproof may take to go after an interrupting signal."""


class StallingUpstream(ScriptedUpstream):
    """The scripted model, which can be told to hold every answer until released: a model
    call still in flight when flowproof is interrupted."""

    def __init__(self) -> None:
        super().__init__(script=list(BOOKING_SCRIPT))
        self.stall = False
        self.released = threading.Event()

    async def _handle(self, request: web.Request) -> web.Response:
        if self.stall:
            self.received.append(Received(request.path, dict(request.headers), None))
            while not self.released.is_set():
                await asyncio.sleep(0.05)
            return web.json_response({"error": {"message": "released"}}, status=500)
        return await super()._handle(request)


@pytest.fixture
def stalling() -> Iterator[StallingUpstream]:
    server = StallingUpstream()
    server.start()
    yield server
    server.released.set()
    server.stop()


def pids_in(pidfile: Path) -> list[int]:
    return [int(pid) for pid in pidfile.read_text().split()] if pidfile.exists() else []


def running(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            continue
    return alive


def wait_until(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the precondition was not reached in time"
        time.sleep(0.05)


def run_records(project: Path) -> list[dict[str, Any]]:
    paths = sorted((project / ".flowproof" / "runs").glob("*/report.json"))
    return [json.loads(path.read_text(encoding="utf-8")) for path in paths]


def test_a_long_line_without_a_newline_is_drained_and_its_end_reported(tmp_path: Path) -> None:
    """Megabytes on stderr with no newline, then exit 1: before, the line reader died at
    64 KiB, the agent blocked on the full pipe, and flowproof never returned."""
    write_spec(tmp_path, agent_env={"AGENT_BUG": "long-line"}, timeout=10)
    started = time.monotonic()
    result = flowproof_run(tmp_path, timeout=25)
    assert result.code == 1, result.output
    assert time.monotonic() - started < 10 + 5
    assert "the agent exited with code 1 before making any model request" in result.stderr
    assert "  | …xxx" in result.stderr and "xxx agent failed: the END" in result.stderr
    assert len(result.stderr) < 20_000, "only the tail of the line is kept"


def test_a_long_line_from_an_agent_that_then_hangs_ends_at_its_timeout(tmp_path: Path) -> None:
    write_spec(tmp_path, agent_env={"AGENT_BUG": "long-line-then-hang"}, timeout=5)
    started = time.monotonic()
    result = flowproof_run(tmp_path, timeout=25)
    assert result.code == 1, result.output
    assert "the agent was still running after its timeout of 5s" in result.stderr
    assert time.monotonic() - started < 5 + 8


def test_an_agent_whose_child_holds_its_stdout_passes_promptly(
    tmp_path: Path, stalling: StallingUpstream
) -> None:
    """The agent exits 0 and leaves a child with its stdout: before, flowproof waited for the
    pipe to close until the timeout and reported the agent as still running."""
    pidfile = tmp_path / "pids"
    env = {"AGENT_BUG": "child-holds-stdout", "AGENT_PIDFILE": str(pidfile)}
    write_spec(tmp_path, agent_env=env, timeout=20)
    started = time.monotonic()
    result = record(tmp_path, stalling)
    assert result.code == 0, result.output
    assert "after its timeout" not in result.stderr
    assert time.monotonic() - started < 15
    assert len(pids_in(pidfile)) == 1 and running(pids_in(pidfile)) == []


def test_a_daemonised_grandchild_is_gone_after_a_passing_flow(
    tmp_path: Path, stalling: StallingUpstream
) -> None:
    pidfile = tmp_path / "pids"
    write_spec(tmp_path, agent_env={"AGENT_BUG": "daemon", "AGENT_PIDFILE": str(pidfile)})
    result = record(tmp_path, stalling)
    assert result.code == 0, result.output
    [daemon] = pids_in(pidfile)
    assert running([daemon]) == [], "the daemon outlived a passing flow"


@pytest.mark.parametrize(
    ("sent", "code"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["SIGINT", "SIGTERM", "SIGHUP"],
)
def test_a_signal_mid_record_stops_everything_and_keeps_the_previous_trace(
    tmp_path: Path, stalling: StallingUpstream, sent: signal.Signals, code: int
) -> None:
    pidfile = tmp_path / "pids"
    spec = write_spec(
        tmp_path, agent_env={"AGENT_BUG": "helpers", "AGENT_PIDFILE": str(pidfile)}, timeout=60
    )
    assert record(tmp_path, stalling).code == 0, "precondition: a first recording"
    trace = spec.with_suffix(".trace.json")
    before = trace.read_bytes()
    pidfile.unlink()
    stalling.received.clear()
    stalling.stall = True

    flowproof = start_flowproof("record", "specs", cwd=tmp_path, upstream=stalling)
    try:
        wait_until(lambda: stalling.received and len(pids_in(pidfile)) == 3)
        tree = pids_in(pidfile)
        assert running(tree) == tree, "precondition: the agent, its child and its daemon run"
        flowproof.send_signal(sent)
        sent_at = time.monotonic()
        stdout, stderr = flowproof.communicate(timeout=GONE_WITHIN + 10)
        took = time.monotonic() - sent_at
    finally:
        flowproof.kill()
        flowproof.wait()
    assert flowproof.returncode == code, stderr
    assert took < GONE_WITHIN, f"flowproof took {took:.1f}s to go"
    assert running(tree) == [], "part of the agent's tree outlived flowproof"
    assert trace.read_bytes() == before, "the previous trace was touched"
    assert f"interrupted by {sent.name}" in stderr

    last = run_records(tmp_path)[-1]
    assert last["exit_code"] == code
    [flow] = last["flows"]
    assert (flow["verdict"], flow["interrupted"], flow["trace"]) == ("fail", sent.name, None)
    assert flow["reasons"] == [
        f"interrupted by {sent.name}: flowproof stopped the agent and every process it "
        "started; no trace was written"
    ]


class Finished:
    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code, self.stdout, self.stderr = code, stdout, stderr

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def flowproof_run(project: Path, timeout: float) -> Finished:
    """`flowproof run` where no trace is needed: a record with no upstream at all, as these
    agents fail before any model call."""
    process = start_flowproof("record", "specs", cwd=project, upstream=None)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        process.kill()
        process.wait()
    return Finished(process.returncode, stdout, stderr)


def start_flowproof(
    *args: str, cwd: Path, upstream: ScriptedUpstream | None, own_group: bool = False
) -> subprocess.Popen[str]:
    """The CLI as tests/conftest.py's flowproof() starts it, but left running, so that a test
    can signal it. `own_group`: in a process group of its own, which a test signals whole, as
    a terminal's Ctrl-C does (a launcher such as npx does not pass on a signal sent to it
    alone)."""
    setting = os.environ.get(ENGINE_VARIABLE, "")
    env = {name: value for name, value in os.environ.items() if name != ENGINE_VARIABLE}
    if not setting.strip():
        env["PYTHONPATH"] = str(ROOT)
    env["FLOWPROOF_AGENT_KEY"] = KEY
    env["FLOWPROOF_AGENT_UPSTREAM"] = upstream.base_url if upstream else "http://127.0.0.1:9/v1"
    return subprocess.Popen(
        [*engine_command(setting), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0 if own_group else None,
    )

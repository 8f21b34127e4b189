"""Ctrl-C reaches an agent blocked in a slow connect the supervisor performs (feasibility
§4.6): the supervisor's watcher answers that connect EINTR once a signal the agent catches is
pending on it (tests/containment/interrupted_connect.py sets the scene)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.containment import netns

pytestmark = pytest.mark.skipif(bool(netns.available()), reason=netns.available() or "ok")


def test_ctrl_c_interrupts_a_slow_declared_connect_at_once() -> None:
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "tests.containment.interrupted_connect"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert not result["timed_out"], "the SIGINT waited for the connect: the agent ran out its time"
    said = result["stdout"].strip()
    assert said.startswith("interrupted after "), result
    seconds = float(said.split()[2])
    # The signal is sent 1 s in; the watcher looks every 20 ms. A connect that ran to its end
    # would take the kernel's SYN retries, about two minutes.
    assert 0.9 <= seconds < 5.0, result
    assert result["exit_code"] == 0, result
    assert result["blocked"] == [], result

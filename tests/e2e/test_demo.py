"""The README's main command: the committed demo replays green with no model and no key."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conftest import ROOT, flowproof


def test_the_demo_replays_green(tmp_path: Path) -> None:
    # The spec runs `python3 examples/agent-demo/agent.py` from the repository root, as the
    # README does with the project's virtualenv first on PATH.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = flowproof("run", "examples/agent-demo/specs/", cwd=ROOT, env={"PATH": path})
    assert result.code == 0, result.output
    assert "PASS  Travel assistant books the cheapest flight to Nairobi" in result.stderr
    assert "3 of 3 turns served" in result.stderr
    # One warning, the one the demo shows on purpose (its README explains it): the mocked
    # search_flights still ran. The spec invites no other.
    warnings = [line.strip() for line in result.stderr.splitlines() if "warning:" in line]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("warning: tool search_flights is mocked at the model boundary")

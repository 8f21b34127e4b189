"""`flowproof doctor --agent CMD`: report the model requests an agent sends, no key needed."""

from __future__ import annotations

import asyncio
import sys

from flowproof.cli.output import out
from flowproof.containment.probe import containment_report
from flowproof.engine.doctor import DEFAULT_PROMPT, DEFAULT_TIMEOUT, run_doctor


def run_doctor_command(command: str, prompt: str | None, timeout: float | None) -> None:
    report = asyncio.run(run_doctor(command, prompt or DEFAULT_PROMPT, timeout or DEFAULT_TIMEOUT))
    out(report.render())
    out(containment_report())
    # Exit 1 on zero so a setup script can stop on it; any arrival is 0 (what arrived, not
    # whether the wiring is complete).
    sys.exit(0 if report.arrived else 1)

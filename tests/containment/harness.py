"""Run one command under flowproof's containment, the way the command driver does, and print
what the supervisor saw as JSON: `python -m tests.containment.harness [--allow E]... -- cmd...`.

The battery (tests/containment/battery.py) starts each attempt through this, inside a network
namespace of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from flowproof.containment.findings import Findings
from flowproof.containment.pins import PinnedPolicy
from flowproof.containment.policy import Policy, parse_entry
from flowproof.containment.session import Supervision
from flowproof.drivers.command import run_command
from flowproof.drivers.launch import SeccompLauncher


async def contained(command: list[str], allow: list[str], timeout: float) -> dict:
    policy = PinnedPolicy(Policy(tuple(parse_entry(entry) for entry in allow), {}))
    findings = Findings()
    launcher = SeccompLauncher(Supervision(policy, findings, dict(os.environ)))
    shell = " ".join(command) if len(command) == 1 else _quote(command)
    outcome = await run_command(shell, dict(os.environ), timeout, asyncio.Event(), launcher)
    return {
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "stdout": outcome.stdout_tail,
        "stderr": outcome.stderr_tail,
        "blocked": list(findings.blocked_destinations()),
        "local": dict(findings.local),
        "fs": [str(event) for event in findings.fs_events()],
        "faults": findings.faults,
    }


def _quote(command: list[str]) -> str:
    import shlex

    return shlex.join(command)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--allow", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    result = asyncio.run(contained(command, options.allow, options.timeout))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""Run one of the action's step scripts the way the runner does: GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY and GITHUB_PATH are temp files, read back after the step."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.action.root import ACTION_ROOT


def runner_temp(tmp_path: Path) -> Path:
    """A runner's temp directory, with files for the runner's own variables; `flowproof`
    is looked for in tmp_path/bin first."""
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    for name in ("output", "summary", "path"):
        (temp / name).write_text("")
    (tmp_path / "bin").mkdir()
    return temp


@dataclass
class Step:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    path: str
    calls: list[list[str]]


def step(script: str, runner: Path, *, path: str | None = None, **env: str) -> Step:
    log = runner / "calls.log"
    log.unlink(missing_ok=True)
    environ = {
        "PATH": path if path is not None else f"{runner.parent / 'bin'}{os.pathsep}/usr/bin:/bin",
        "HOME": str(runner.parent),
        "RUNNER_TEMP": str(runner),
        "GITHUB_OUTPUT": str(runner / "output"),
        "GITHUB_STEP_SUMMARY": str(runner / "summary"),
        "GITHUB_PATH": str(runner / "path"),
        "FAKE_LOG": str(log),
        **env,
    }
    done = subprocess.run(
        ["bash", str(ACTION_ROOT / "action" / script)],
        env=environ,
        cwd=runner.parent,
        capture_output=True,
        text=True,
        timeout=30,
    )
    outputs = {}
    for line in (runner / "output").read_text().splitlines():
        name, _, value = line.partition("=")
        outputs[name] = value
    calls = []
    if log.exists():  # the fake engine logs each call's arguments, one a line, then a marker
        call: list[str] = []
        for line in log.read_text().splitlines():
            if line == "--end-of-call--":
                calls.append(call)
                call = []
            else:
                call.append(line)
    return Step(
        done.returncode,
        done.stdout,
        done.stderr,
        outputs,
        (runner / "summary").read_text(),
        (runner / "path").read_text(),
        calls,
    )

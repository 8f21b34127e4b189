"""Shared fixtures: a clean environment, the scripted upstream, and the one way to run flowproof."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flowproof.host import proxy_environ
from tests.upstream.scripted import ScriptedUpstream

pytest_plugins = ["pytester"]  # tests/e2e/test_pytest_plugin.py runs pytest on flows

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "tests" / "agents"
STRIPPED_PREFIXES = (
    "OPENAI_",
    "ANTHROPIC_",
    "FLOWPROOF_",
    "AGENT_",
    "GOOGLE_",
    "GEMINI_",
    "AZURE_OPENAI_",
    "OLLAMA_",
)
PROXY_VARIABLES = (*proxy_environ.PROXY_VARIABLES, *proxy_environ.NO_PROXY_VARIABLES)
ENGINE_VARIABLE = "FLOWPROOF_TEST_ENGINE"
"""Names the flowproof the end-to-end tests run (a frozen binary, `npx flowproof`, ...)."""


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer's key, base URL or proxy setting may leak into a test."""
    for name in list(os.environ):
        if name == ENGINE_VARIABLE:
            continue  # the developer's choice of engine, read by `flowproof()` alone
        if name.startswith(STRIPPED_PREFIXES) or name in PROXY_VARIABLES:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    server = ScriptedUpstream()
    server.start()
    yield server
    server.stop()


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def engine_command(setting: str) -> tuple[str, ...]:
    """The command that starts flowproof: this interpreter's `python -m flowproof` when
    `setting` is empty, else `setting` split like a shell line, a relative program path being
    taken from the repository root."""
    if not setting.strip():
        return (sys.executable, "-m", "flowproof")
    program, *arguments = shlex.split(setting)
    if os.sep in program and not os.path.isabs(program):
        program = str(ROOT / program)
    return (program, *arguments)


def flowproof(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
    timeout: float = 120,
) -> CliResult:
    """Run the real CLI in a subprocess, the way a user's CI does: every end-to-end test starts
    flowproof here, as the engine FLOWPROOF_TEST_ENGINE names (default: python -m flowproof)."""
    setting = os.environ.get(ENGINE_VARIABLE, "")
    inherited = {name: value for name, value in os.environ.items() if name != ENGINE_VARIABLE}
    if not setting.strip():
        inherited["PYTHONPATH"] = str(ROOT)  # this checkout's flowproof, not an installed one
    done = subprocess.run(
        [*prefix, *engine_command(setting), *args],
        cwd=cwd,
        env={**inherited, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def agent_command(name: str) -> str:
    return f"{sys.executable} {AGENTS / name}"

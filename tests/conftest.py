"""Shared fixtures: a clean environment, the scripted upstream, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.upstream.scripted import ScriptedUpstream

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "tests" / "agents"
STRIPPED_PREFIXES = ("OPENAI_", "ANTHROPIC_", "FLOWPROOF_", "AGENT_")
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer's key, base URL or proxy setting may leak into a test."""
    for name in list(os.environ):
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


def flowproof(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
    timeout: float = 120,
) -> CliResult:
    """Run the real CLI in a subprocess, the way a user's CI does."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "flowproof", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def agent_command(name: str) -> str:
    return f"{sys.executable} {AGENTS / name}"

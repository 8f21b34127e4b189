"""engine_argv() starts this same engine, frozen or not, and nothing else spells it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from flowproof._version import __version__
from flowproof.host.engine_argv import engine_argv

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "flowproof"


def test_from_source_it_is_this_interpreter_running_this_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(sys, "frozen", raising=False)
    argv = engine_argv()
    assert argv[:2] == [sys.executable, "-c"] and argv[3] == str(ROOT)


def test_from_source_it_needs_no_environment_and_no_working_directory(tmp_path: Path) -> None:
    """What an MCP SDK gives a stdio server it spawns: PATH and HOME, some other directory."""
    done = subprocess.run(
        [*engine_argv(), "--version"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        cwd=tmp_path,
        timeout=60,
    )
    assert done.stdout == f"flowproof {__version__}\n", done.stderr


def test_frozen_it_is_the_bundle_executable_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/flowproof/flowproof")
    assert engine_argv() == ["/opt/flowproof/flowproof"]


def test_the_argv_starts_a_working_engine() -> None:
    done = subprocess.run(
        [*engine_argv(), "--version"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.stdout == f"flowproof {__version__}\n", done.stderr


SPELLINGS = re.compile(r"""-m["']?\s*,?\s*["']?flowproof\b(?!\.)|sys\.executable""")


def test_nothing_else_in_the_package_spells_the_engine_command() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "engine_argv.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SPELLINGS.search(line)
    ]
    assert not offenders, (
        "start the engine with flowproof.host.engine_argv.engine_argv():\n" + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    "line",
    [
        'argv = [sys.executable, "-m", "flowproof", "mcp-stdio"]',
        "subprocess.run(['python', '-m', 'flowproof'])",
        'command = f"{python} -m flowproof run"',
    ],
)
def test_the_check_catches_the_usual_spellings(line: str) -> None:
    assert SPELLINGS.search(line)


def test_the_check_leaves_module_entry_points_of_tools_alone() -> None:
    assert not SPELLINGS.search("python -m flowproof.assertions.docgen > docs/steps.md")

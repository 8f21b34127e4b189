"""The project's own CI workflow (.github/workflows/ci.yml) runs what .ci/run runs on Linux,
the portable part of the suite on macOS, and nothing on Windows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


CI = load(WORKFLOWS / "ci.yml")


def runs(job: str) -> list[str]:
    return [step["run"] for step in CI["jobs"][job]["steps"] if "run" in step]


def make_variable(name: str) -> list[str]:
    """A `NAME := ...` list of the Makefile, its continuation lines joined."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    found = re.search(rf"^{name} := (.*)$", text, re.MULTILINE)
    assert found, name
    return shlex.split(found.group(1))


def test_linux_runs_what_ci_run_runs_as_root() -> None:
    assert CI["jobs"]["linux"]["runs-on"] == "ubuntu-24.04"
    local = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for target in re.findall(r"^make (\S+)$", local, re.MULTILINE):
        assert f'sudo --preserve-env=CI env "PATH=$PATH" make {target}' in runs("linux"), target


def test_macos_runs_the_portable_tests() -> None:
    assert CI["jobs"]["macos"]["runs-on"] == "macos-15"
    assert "make test-portable" in runs("macos")


def test_the_portable_selection_names_files_that_exist() -> None:
    for path in make_variable("PORTABLE_TESTS") + make_variable("PORTABLE_IGNORED"):
        assert (ROOT / path).exists(), f"Makefile PORTABLE_*: {path} does not exist"


def test_no_workflow_runs_on_windows() -> None:
    for path in WORKFLOWS.glob("*.y*ml"):
        assert not re.search(r"windows-|runner\.os == 'Windows'", path.read_text()), path.name

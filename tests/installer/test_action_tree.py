"""installer/action_tree.py: the tree published as flowproof/action holds what the composite
runs, and the action's own tests pass with that tree as the action's root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from installer import action_tree
from tests.action.root import ROOT_VARIABLE
from tests.conftest import ROOT

ACTION_TESTS = ("tests/action", "tests/e2e/test_action.py")


def action_tests(tree: Path, *selection: str) -> subprocess.CompletedProcess[str]:
    """The action's tests, run with `tree` as the action's root (from this checkout's tests)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection],
        cwd=ROOT,
        env={**os.environ, ROOT_VARIABLE: str(tree)},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    out = tmp_path / "flowproof-action"
    action_tree.assemble(out)
    return out


def test_the_tree_holds_the_action_its_scripts_and_the_installer(tree: Path) -> None:
    files = sorted(str(path.relative_to(tree)) for path in tree.rglob("*") if path.is_file())
    scripts = sorted(f"action/{path.name}" for path in (ROOT / "action").glob("*.sh"))
    assert files == sorted(["README.md", "action.yml", "installer/install.sh", *scripts])
    assert os.access(tree / "action" / "run.sh", os.X_OK)
    assert "installs flowproof " in (tree / "README.md").read_text()


def test_the_action_tests_pass_against_the_tree(tree: Path) -> None:
    done = action_tests(tree, *ACTION_TESTS)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout


def test_the_action_tests_see_a_tree_without_the_installer(tree: Path) -> None:
    (tree / "installer" / "install.sh").unlink()
    done = action_tests(
        tree,
        "tests/action/test_action_scripts.py::test_setup_pins_this_releases_version",
        "tests/action/test_action_yml.py::test_action_files_ship_with_the_repository",
    )
    assert done.returncode == 1
    assert "2 failed" in done.stdout, done.stdout[-3000:]


def test_a_non_empty_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "left-over").write_text("")
    with pytest.raises(action_tree.TreeError, match="is not empty"):
        action_tree.assemble(tmp_path)


def test_an_installer_pinning_another_version_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(ROOT / "action", source / "action")
    shutil.copy(ROOT / "action.yml", source)
    (source / "installer").mkdir()
    installer = (ROOT / "installer" / "install.sh").read_text()
    (source / "installer" / "install.sh").write_text(
        installer.replace("FLOWPROOF_RELEASED_VERSION=", 'FLOWPROOF_RELEASED_VERSION="9.9.9"\n#', 1)
    )
    with pytest.raises(action_tree.TreeError, match=r"installer/install.sh pins 9\.9\.9 but"):
        action_tree.assemble(tmp_path / "out", source)
    assert not (tmp_path / "out").exists()

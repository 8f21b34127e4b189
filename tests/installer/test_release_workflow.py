"""The release workflow, the installer and the build agree on the glibc floor and the targets."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
INSTALLER = (ROOT / "installer" / "install.sh").read_text()


def test_the_gate_and_the_installer_share_one_glibc_floor() -> None:
    floor = WORKFLOW["env"]["GLIBC_FLOOR"]
    assert f'FLOWPROOF_GLIBC_FLOOR="{floor}"' in INSTALLER
    gate = [s for s in WORKFLOW["jobs"]["build"]["steps"] if s.get("name") == "glibc gate"]
    assert gate and '--max "$GLIBC_FLOOR" dist/flowproof' in gate[0]["run"]


def test_every_built_target_is_checked_before_publishing() -> None:
    built = [
        entry["target"] for entry in WORKFLOW["jobs"]["build"]["strategy"]["matrix"]["include"]
    ]
    for target in built:
        assert re.fullmatch(r"linux-(x64|arm64)-gnu|darwin-(x64|arm64)", target)
    check = next(
        s["run"]
        for s in WORKFLOW["jobs"]["publish"]["steps"]
        if s.get("name", "").startswith("Every target built")
    )
    assert f"for target in {' '.join(built)}; do" in check


def test_linux_builds_run_on_the_old_glibc_image() -> None:
    for entry in WORKFLOW["jobs"]["build"]["strategy"]["matrix"]["include"]:
        if entry["target"].startswith("linux-"):
            assert entry["image"] == "python:3.11-slim-bullseye"  # glibc 2.31


def built_targets() -> list[str]:
    return [entry["target"] for entry in WORKFLOW["jobs"]["build"]["strategy"]["matrix"]["include"]]


def test_every_built_target_can_run_a_flow() -> None:
    """No Windows build (the engine exits 2 there) and no musl build (the installer and the
    launcher refuse musl): each release build runs tests/e2e/test_frozen.py's record -> replay."""
    assert not [t for t in built_targets() if t.startswith("win32") or t.endswith("-musl")]
    steps = WORKFLOW["jobs"]["build"]["steps"]
    selftest = [s for s in steps if "tests/e2e/test_frozen.py" in s.get("run", "")]
    assert len(selftest) == 1 and "if" not in selftest[0], selftest


def test_the_npm_launcher_knows_exactly_the_built_targets() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    platform_js = ROOT / "npm" / "flowproof" / "lib" / "platform.js"
    done = subprocess.run(
        [
            "node",
            "-e",
            f"console.log(JSON.stringify(require({json.dumps(str(platform_js))})"
            ".TARGETS.map((t) => t.key)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert sorted(json.loads(done.stdout)) == sorted(built_targets())


def test_the_action_is_tested_as_assembled_and_its_major_tag_is_the_one_users_are_told() -> None:
    job = WORKFLOW["jobs"]["action"]
    assert job["needs"] == "publish"
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert 'python installer/action_tree.py "$RUNNER_TEMP/action"' in runs
    assert 'FLOWPROOF_ACTION_ROOT="$RUNNER_TEMP/action"' in runs
    assert 'git tag --force "$ACTION_MAJOR"' in runs
    assert 'git push --quiet --force origin "refs/tags/$ACTION_MAJOR"' in runs
    told = f"uses: {job['env']['ACTION_REPOSITORY']}@{job['env']['ACTION_MAJOR']}"
    for doc in ("README.md", "docs/ci.md", "docs/action.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert told in text, doc
        assert not re.findall(r"uses: flowproof/[\w-]+@v\d+", text.replace(told, "")), doc


def test_the_python_package_is_built_proven_and_published_by_trusted_publishing() -> None:
    built = WORKFLOW["jobs"]["python-dist"]
    assert built["container"] == "python:3.11-slim-bullseye"  # glibc 2.31, as the archives
    commands = "\n".join(step.get("run", "") for step in built["steps"])
    assert "python installer/python_dist.py" in commands
    assert "python installer/python_channel.py" in commands
    publish = WORKFLOW["jobs"]["publish-pypi"]
    assert set(publish["needs"]) == {"build", "python-dist"}
    assert publish["permissions"] == {"id-token": "write"}
    [upload] = [s for s in publish["steps"] if "gh-action-pypi-publish" in s.get("uses", "")]
    assert upload["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert "password" not in upload.get("with", {})  # no stored token: trusted publishing

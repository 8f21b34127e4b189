"""The release workflow, the installer and the build agree on the glibc floor and the targets."""

from __future__ import annotations

import re

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
        assert re.fullmatch(r"linux-(x64|arm64)-(gnu|musl)|(darwin|win32)-(x64|arm64)", target)
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

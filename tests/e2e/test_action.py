"""The action's steps with the real engine: run a recorded flow, post its comment to a
loopback fake GitHub, end with its exit code; and `flowproof run` never loads the client."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action.fake_github import OWNER, REPO, TOKEN, FakeGitHub
from tests.action.steps import runner_temp, step
from tests.conftest import ENGINE_VARIABLE, ROOT, engine_command

PR = 7


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    yield fake
    fake.stop()


def github_env(tmp_path: Path, github: FakeGitHub) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": f"{OWNER}/{REPO}",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_EVENT_NAME": "pull_request",
    }


def install_engine(tmp_path: Path) -> None:
    """`flowproof` on the steps' PATH: the engine the end-to-end suite runs."""
    command = engine_command(os.environ.get(ENGINE_VARIABLE, ""))
    wrapper = tmp_path / "bin" / "flowproof"
    wrapper.write_text(
        f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.join(command)} "$@"\n'
    )
    wrapper.chmod(0o755)


def test_the_steps_run_the_engine_comment_and_finish(recorded: Path, github: FakeGitHub) -> None:
    runner = runner_temp(recorded)
    install_engine(recorded)
    path = f"{recorded / 'bin'}{os.pathsep}{os.environ['PATH']}"
    env = github_env(recorded, github)
    report = runner / "report"
    report.mkdir()

    ran = step(
        "run.sh",
        runner,
        path=path,
        SPECS="specs",
        ARGS="",
        FP_BIN="",
        REPORT_DIR=str(report),
        **env,
    )
    assert ran.code == 0, ran.stderr
    assert ran.outputs["exit-code"] == "0", ran.stderr
    assert (ran.outputs["passed"], ran.outputs["failed"], ran.outputs["errors"]) == ("1", "0", "0")
    markdown = Path(ran.outputs["markdown"]).read_text(encoding="utf-8")
    assert Path(ran.outputs["html"]).read_text(encoding="utf-8").startswith("<!")
    assert "<testcase " in Path(ran.outputs["junit"]).read_text(encoding="utf-8")
    assert ran.summary == markdown + "\n"  # the engine wrote the job summary itself

    commented = step(
        "comment.sh",
        runner,
        path=path,
        MODE="always",
        CODE="0",
        MARKER="flowproof",
        MARKDOWN=ran.outputs["markdown"],
        ARTIFACT_URL="",
        FP_BIN="",
        GITHUB_TOKEN=TOKEN,
        **env,
    )
    assert commented.code == 0, commented.stderr
    assert "created the comment on pull request #7" in commented.stderr
    assert [c["body"] for c in github.comments[PR]] == [
        "<!-- flowproof-comment: flowproof -->\n" + markdown
    ]
    assert TOKEN not in commented.stdout + commented.stderr

    finished = step(
        "finish.sh", runner, path=path, CODE="0", FAIL_ON_FAILURE="true", ARTIFACT_URL=""
    )
    assert finished.code == 0


def test_flowproof_run_never_imports_the_github_client(recorded: Path, tmp_path: Path) -> None:
    """In process, so sys.modules is the run's own: the command `run` with every GitHub
    output on (job summary, annotations, the markdown the comment is made from)."""
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['flowproof', 'run', 'specs', '--markdown', 'comment.md']\n"
        "try:\n    runpy.run_module('flowproof', run_name='__main__')\n"
        "except SystemExit as stop:\n    code = stop.code\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('flowproof.github', 'flowproof.cli.github')))\n"
        "print('EXIT', code, 'LOADED', loaded, 'AIOHTTP', 'aiohttp' in sys.modules)\n"
    )
    summary = tmp_path / "summary.md"
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=recorded,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_TOKEN": TOKEN,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Neither the GitHub client module nor aiohttp (replay serves HTTP itself, proxy/http.py).
    assert done.stdout.splitlines()[-1] == "EXIT 0 LOADED [] AIOHTTP False", done.stderr
    assert summary.read_text(encoding="utf-8").strip()

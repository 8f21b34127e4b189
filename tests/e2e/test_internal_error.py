"""A bug in flowproof is exit 3: one line on stderr, the traceback saved beside the run record,
and the run record still written with what the run knew.

The crash is forced by replacing one engine function in-process (the CLI runs in this
process through click's runner), so these tests drive the python engine only.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from flowproof.cli import main
from flowproof.engine import front
from tests.conftest import ROOT

V1 = ROOT / "tests" / "data" / "traces" / "v1"
FIXTURE = "openai_chat-demo"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Two replayable flows (a.yaml, b.yaml); the second one's run_flow raises."""
    specs = tmp_path / "specs"
    specs.mkdir()
    template = (V1 / f"{FIXTURE}.yaml").read_text().format(python=sys.executable, root=ROOT)
    for name in ("a", "b"):
        (specs / f"{name}.yaml").write_text(template)
        shutil.copyfile(V1 / f"{FIXTURE}.trace.json", specs / f"{name}.trace.json")
    real = front.run_flow

    async def crashing(context: Any, *args: Any, **kwargs: Any) -> Any:
        if context.loaded.path.name == "b.yaml":
            raise KeyError("a bug in flowproof")
        return await real(context, *args, **kwargs)

    monkeypatch.setattr(front, "run_flow", crashing)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def invoke(*args: str, **env: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env or None)


def test_an_internal_error_is_exit_3_with_one_line_and_a_saved_traceback(project: Path) -> None:
    result = invoke("run", "specs")
    assert result.exit_code == 3, result.output
    lines = result.stderr.splitlines()
    crash = [line for line in lines if "internal error" in line]
    assert len(crash) == 1 and "Traceback" not in result.stderr
    assert crash[0].startswith("flowproof: internal error (KeyError: 'a bug in flowproof'); ")
    (record_path,) = (project / ".flowproof" / "runs").glob("*/report.json")
    saved = record_path.parent / "traceback.txt"
    assert f"its traceback is in {saved.relative_to(project)}" in crash[0]
    assert "FLOWPROOF_DEBUG=1 prints it" in crash[0]
    assert "Traceback (most recent call last)" in saved.read_text()
    record = json.loads(record_path.read_text())
    assert record["exit_code"] == 3
    assert record["internal_error"] == "KeyError: 'a bug in flowproof'"
    assert [flow["spec"] for flow in record["flows"]] == [str(Path("specs") / "a.yaml")]
    assert record["flows"][0]["verdict"] == "pass"


def test_flowproof_debug_prints_the_traceback_too(project: Path) -> None:
    result = invoke("run", "specs", FLOWPROOF_DEBUG="1")
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr
    assert "KeyError: 'a bug in flowproof'" in result.stderr


def test_a_crash_outside_a_run_saves_its_traceback_under_the_runs_dir(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `flowproof.cli.diff` the attribute is the click command; the module is this one.
    diff = importlib.import_module("flowproof.cli.diff")

    def broken(*args: Any) -> Any:
        raise RuntimeError("diff exploded")

    monkeypatch.setattr(diff, "trace_changes", broken)
    trace = str(Path("specs") / "a.trace.json")
    result = invoke("diff", trace, trace, FLOWPROOF_RUNS_DIR="elsewhere")
    assert result.exit_code == 3
    (saved,) = (project / "elsewhere").glob("crash-*/traceback.txt")
    assert "RuntimeError: diff exploded" in saved.read_text()

"""action.yml: a thin composite whose inputs reach scripts through `env:` only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.action.root import ACTION_ROOT
from tests.conftest import ROOT

ACTION = ACTION_ROOT / "action.yml"
INJECTION = ("${{ inputs.", "${{ github.event.")
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def load(text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def steps(action: dict[str, Any]) -> list[dict[str, Any]]:
    found = action["runs"]["steps"]
    assert isinstance(found, list)
    return found


def injected_run_bodies(action: dict[str, Any]) -> list[str]:
    """The ids (or positions) of steps whose `run:` body interpolates an expression."""
    return [
        str(step.get("id", index))
        for index, step in enumerate(steps(action))
        if "run" in step and "${{" in " ".join(str(step["run"]).split())
    ]


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    return load(ACTION.read_text(encoding="utf-8"))


def test_no_run_body_interpolates_an_expression(action: dict[str, Any]) -> None:
    assert injected_run_bodies(action) == []
    for step in steps(action):
        for pattern in INJECTION:
            assert pattern not in str(step.get("run", ""))


@pytest.mark.parametrize("pattern", INJECTION)
def test_the_check_catches_an_injected_body(pattern: str) -> None:
    bad = load(
        "runs:\n  using: composite\n  steps:\n"
        f'    - id: evil\n      shell: bash\n      run: echo "{pattern}x }}"\n'
    )
    assert injected_run_bodies(bad) == ["evil"]


def test_it_is_a_composite_of_bash_steps_and_pinned_actions(action: dict[str, Any]) -> None:
    assert action["runs"]["using"] == "composite"
    for step in steps(action):
        if "run" in step:
            assert step["shell"] == "bash", step
            script = re.fullmatch(r'bash "\$ACTION_PATH/(action/[\w.-]+\.sh)"', step["run"])
            assert script, step["run"]
            assert (ACTION_ROOT / script.group(1)).is_file()
            assert step["env"]["ACTION_PATH"] == "${{ github.action_path }}"
        else:
            assert PINNED.match(step["uses"]), f"{step['uses']} is not pinned by commit"


def test_every_pinned_action_names_its_tag(action: dict[str, Any]) -> None:
    text = ACTION.read_text(encoding="utf-8")
    for step in steps(action):
        if "uses" in step:
            assert re.search(re.escape(step["uses"]) + r" # v\d+\.\d+\.\d+\n", text), step["uses"]


def test_the_inputs_and_outputs_the_issue_names(action: dict[str, Any]) -> None:
    inputs = action["inputs"]
    assert inputs["specs"]["default"] == "specs/"
    assert inputs["comment"]["default"] == "auto"
    assert inputs["version"]["default"] == ""  # the version this release pins (setup.sh)
    assert inputs["github-token"]["default"] == "${{ github.token }}"
    assert inputs["fail-on-failure"]["default"] == "true"
    assert inputs["upload-report"]["default"] == "true"
    assert {"args", "comment-marker", "flowproof-bin", "report-name"} <= set(inputs)
    outputs = action["outputs"]
    for name in ("exit-code", "passed", "failed"):
        assert outputs[name]["value"] == f"${{{{ steps.run.outputs.{name} }}}}"


def test_every_input_is_used_and_every_step_output_comes_from_a_step(
    action: dict[str, Any],
) -> None:
    text = ACTION.read_text(encoding="utf-8")
    body = text[text.index("\nruns:") :]
    for name in action["inputs"]:
        assert f"inputs.{name} }}}}" in body or f"inputs.{name} ==" in body, name
    ids = {step.get("id") for step in steps(action)}
    for referenced in re.findall(r"steps\.([\w-]+)\.", text):
        assert referenced in ids, referenced


def test_the_job_ends_with_flowproofs_exit_code(action: dict[str, Any]) -> None:
    last = steps(action)[-1]
    assert last["run"] == 'bash "$ACTION_PATH/action/finish.sh"'
    assert last["if"].startswith("always()")
    assert last["env"]["CODE"] == "${{ steps.run.outputs.exit-code }}"
    # Nothing after the run step may decide the job: the upload and the comment only warn.
    for step in steps(action):
        if step.get("id") in ("upload", "comment", "cache-save"):
            assert step["continue-on-error"] is True
        if step.get("id") in ("upload", "comment"):
            assert step["if"].startswith("always()")


def test_the_version_default_is_the_packaged_version() -> None:
    from flowproof._version import __version__

    installer = (ACTION_ROOT / "installer" / "install.sh").read_text(encoding="utf-8")
    # action/setup.sh reads the pinned version from this line of the installer it ships with
    assert f'\nFLOWPROOF_RELEASED_VERSION="{__version__}"\n' in installer


def test_docs_describe_every_input_and_output(action: dict[str, Any]) -> None:
    docs = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    for name in [*action["inputs"], *action["outputs"]]:
        assert f"`{name}`" in docs, name
    assert "pull-requests: write" in docs


def test_action_files_ship_with_the_repository() -> None:
    scripts = sorted(p.name for p in (ACTION_ROOT / "action").glob("*.sh"))
    assert scripts == ["comment.sh", "finish.sh", "install.sh", "lib.sh", "run.sh", "setup.sh"]
    for script in scripts:
        if script != "lib.sh":
            assert (ACTION_ROOT / "action" / script).stat().st_mode & 0o111, (
                f"{script} is executable"
            )
    assert Path(ACTION_ROOT / "action.yml").is_file()
    assert (ACTION_ROOT / "installer" / "install.sh").is_file()  # the install step runs it

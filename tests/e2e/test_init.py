"""`flowproof init`, run as a user runs it: the real CLI in a fresh project directory.

The files it writes are read back the way their readers read them: the starter flow with
flowproof's own spec loader, the workflows as YAML (what GitHub parses).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from flowproof.spec.load import load_spec
from tests.conftest import CliResult, agent_command, flowproof

SPEC = "specs/example.yaml"
REPLAY = ".github/workflows/flowproof.yml"
RECORD = ".github/workflows/flowproof-record.yml"
WRITTEN = (SPEC, ".gitignore", REPLAY, RECORD)
KEYS = {
    "FLOWPROOF_AGENT_KEY": "sk-init-flowproof-key-5f2a9c",
    "OPENAI_API_KEY": "sk-proj-init-openai-key-77b1e0",
    "ANTHROPIC_API_KEY": "sk-ant-init-anthropic-key-0c3d",
    "GOOGLE_API_KEY": "AIzaInitGoogleKey9d8e7f",
}
NEXT = (
    'flowproof doctor --agent "python3 agent.py"\n'
    "  flowproof record --verify specs/example.yaml\n"
    "  flowproof run\n"
)


def init(project: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    return flowproof("init", *args, cwd=project, env=env)


def contents(project: Path) -> dict[str, bytes]:
    return {name: (project / name).read_bytes() for name in WRITTEN}


def workflow(project: Path, name: str) -> dict[Any, Any]:
    parsed = yaml.safe_load((project / name).read_text())
    assert isinstance(parsed, dict)
    return parsed


def triggers(parsed: dict[Any, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the bare key `on` as the boolean true; GitHub reads it as "on".
    on = parsed.get("on", parsed.get(True))
    assert isinstance(on, dict), on
    return on


def steps_of(parsed: dict[Any, Any]) -> list[dict[str, Any]]:
    (job,) = parsed["jobs"].values()
    steps = job["steps"]
    assert isinstance(steps, list)
    return steps


def test_init_in_an_empty_directory_writes_a_loadable_flow_and_both_workflows(
    tmp_path: Path,
) -> None:
    result = init(tmp_path, env=KEYS)
    assert result.code == 0, result.output
    for name in WRITTEN:
        assert f"wrote: {name}\n" in result.stderr
    assert "Next:\n  " + NEXT in result.stderr

    loaded = load_spec(tmp_path / SPEC)
    assert loaded.spec.agent.command == "python3 agent.py"
    assert loaded.prompts and loaded.assertions
    assert (tmp_path / ".gitignore").read_text().splitlines()[-1] == ".flowproof/"

    replay = workflow(tmp_path, REPLAY)
    assert {"pull_request", "workflow_dispatch"} <= set(triggers(replay))
    (action,) = [step for step in steps_of(replay) if step.get("uses") == "flowproof/action@v1"]
    assert action["with"]["specs"] == "specs/"
    assert action["with"]["upload-report"] is True
    assert action["with"]["comment"] == "auto"
    assert replay["permissions"]["pull-requests"] == "write"

    record = workflow(tmp_path, RECORD)
    assert {"schedule", "workflow_dispatch"} <= set(triggers(record))
    (recording,) = [step for step in steps_of(record) if "record" in step.get("run", "")]
    assert recording["env"] == {"FLOWPROOF_AGENT_KEY": "${{ secrets.FLOWPROOF_AGENT_KEY }}"}
    (opener,) = [
        step
        for step in steps_of(record)
        if step.get("uses", "").startswith("peter-evans/create-pull-request@")
    ]
    assert opener["with"]["add-paths"] == "*.trace.json"
    record_text = (tmp_path / RECORD).read_text()
    assert "does NOT start other workflows" in record_text
    assert "FLOWPROOF_PR_TOKEN" in opener["with"]["token"]

    everything = result.output + "".join((tmp_path / name).read_text() for name in WRITTEN)
    for value in KEYS.values():
        assert value not in everything
    assert not re.search(r"\b(sk-[A-Za-z0-9]|AIza)", everything)
    # Every secret is named inside an expression GitHub fills at run time, never written out.
    for line in everything.splitlines():
        if "secrets." in line:
            assert re.search(r"\$\{\{ secrets\.[A-Z_]+( \|\| github\.token)? \}\}", line), line


def test_a_second_init_changes_nothing_and_names_what_it_left_alone(tmp_path: Path) -> None:
    assert init(tmp_path).code == 0
    # The user's edits are what a second init must keep.
    for name in WRITTEN:
        with (tmp_path / name).open("a") as edited:
            edited.write("# edited by the user\n")
    before = contents(tmp_path)
    again = init(tmp_path)
    assert again.code == 0, again.output
    assert contents(tmp_path) == before
    for name in (SPEC, REPLAY, RECORD):
        assert f"left alone (it exists): {name}\n" in again.stderr
    assert "left alone (it already ignores .flowproof/): .gitignore\n" in again.stderr
    assert "wrote" not in again.stderr
    assert "Next:\n  " + NEXT in again.stderr


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (
            "node_modules\n*.pyc",  # no newline at the end
            "node_modules\n*.pyc\n# flowproof's run records (every run writes one)\n.flowproof/\n",
        ),
        ("dist/\n/.flowproof\n", "dist/\n/.flowproof\n"),  # already ignored, another spelling
    ],
)
def test_an_existing_gitignore_gets_the_line_once(
    tmp_path: Path, existing: str, expected: str
) -> None:
    (tmp_path / ".gitignore").write_text(existing)
    first = init(tmp_path)
    assert first.code == 0, first.output
    assert init(tmp_path).code == 0
    assert (tmp_path / ".gitignore").read_text() == expected


def test_a_file_in_the_way_is_exit_2_naming_the_path_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / ".github").write_text("not a directory\n")
    result = init(tmp_path)
    assert result.code == 2, result.output
    assert (
        f"error: cannot write {REPLAY}: Not a directory; .github is a file where a directory "
        "must be: move it away, then run `flowproof init` again (it keeps what it wrote)\n"
    ) in result.stderr
    assert f"error: cannot write {RECORD}:" in result.stderr
    assert "Traceback" not in result.output
    assert (tmp_path / SPEC).is_file()  # what could be written was


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a read-only bind mount in a private mount namespace needs root and unshare",
)
def test_a_read_only_directory_is_exit_2_naming_the_path_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    # The mount exists in this process's private namespace only; the host's stays as it was.
    read_only = (
        'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && cd "$1" && '
        'shift && exec "$@"'
    )
    prefix = ("unshare", "-m", "sh", "-c", read_only, str(tmp_path / ".github"), str(tmp_path))
    result = flowproof("init", cwd=tmp_path, prefix=prefix)
    assert result.code == 2, result.output
    assert (
        f"error: cannot write {REPLAY}: Read-only file system; run init in a writable "
        "checkout, or write the file yourself from docs/ci.md"
    ) in result.stderr
    assert not (tmp_path / ".github" / "workflows").exists()


def test_agent_fills_the_command_and_declares_what_doctor_found(tmp_path: Path) -> None:
    """The agent puts today's date in its prompt: doctor names it, and init declares it."""
    command = f'FLOWPROOF_PROMPT="Today is $(date -u +%F)" {agent_command("openai_chat_agent.py")}'
    result = init(tmp_path, "--agent", command)
    assert result.code == 0, result.output
    assert "1 model request arrived." in result.stderr
    loaded = load_spec(tmp_path / SPEC)
    assert loaded.spec.agent.command == command
    assert loaded.spec.normalize == ["date"]
    # The next commands name the agent as a shell would read it back.
    (doctor_line,) = [
        line for line in result.stderr.splitlines() if line.startswith("  flowproof doctor")
    ]
    quoted = doctor_line.strip().removeprefix("flowproof doctor --agent ")
    echoed = subprocess.run(["sh", "-c", f"printf %s {quoted}"], capture_output=True, text=True)
    assert echoed.stdout == command


def test_an_agent_that_never_reaches_the_proxy_gets_the_hint_instead(tmp_path: Path) -> None:
    command = f"AGENT_BUG=hardcoded-base-url {agent_command('openai_chat_agent.py')}"
    result = init(tmp_path, "--agent", command)
    assert result.code == 0, result.output
    assert "no model request reached flowproof's proxy" in result.stderr
    loaded = load_spec(tmp_path / SPEC)
    assert loaded.spec.normalize == []
    assert "# Run `flowproof doctor --agent" in (tmp_path / SPEC).read_text()


def test_a_key_in_the_agent_command_is_refused_and_never_written(tmp_path: Path) -> None:
    key = KEYS["OPENAI_API_KEY"]
    result = init(tmp_path, "--agent", f"OPENAI_API_KEY={key} python3 agent.py", env=KEYS)
    assert result.code == 2, result.output
    assert "the command holds a model key" in result.stderr
    assert key not in result.output
    assert not (tmp_path / "specs").exists()

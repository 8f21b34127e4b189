"""An agent sees the same project at record, at `record --verify` and at every replay.

Coding agents show the model their project: Gemini CLI lists the working tree in its first
prompt (git-ignored folders collapsed, not left out). What flowproof itself adds to the
project must then look the same at every run: the trace beside the spec (held by an empty file
while a first record runs, so the agent sees it as every replay will), `.flowproof/` (made when
a run starts, not when its record is written at the end) and, in a git checkout, `.git/`
(which verify's copy keeps, as a CI checkout has one). The agent here lists its working
directory and `specs/` into its system prompt, through the real openai SDK.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

from tests.conftest import agent_command, flowproof
from tests.upstream.scripted import ScriptedUpstream, text

KEY = "sk-project-view-upstream-key"


def project_with_spec(root: Path, *, git: bool = False) -> Path:
    project = root / "project"
    (project / "specs").mkdir(parents=True)
    (project / "specs" / "look.yaml").write_text(
        textwrap.dedent(f"""\
            name: Agent describes its project
            app: agent
            agent:
              command: "{agent_command("lister_agent.py")}"
            steps:
              - prompt: What is in this project?
              - assert: reply contains specs
            """)
    )
    if git:
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        (project / ".gitignore").write_text(".flowproof/\n")
    return project


def record(project: Path, upstream: ScriptedUpstream, *args: str) -> tuple[int, str]:
    upstream.script = [text("It holds specs and their traces.")] * 4
    result = flowproof(
        "record",
        "specs",
        *args,
        cwd=project,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY},
    )
    return result.code, result.output


def seen(upstream: ScriptedUpstream) -> str:
    """The project as the agent described it to the model in its last request."""
    return str(upstream.received[-1].body["messages"][0]["content"])


def test_a_first_record_shows_the_agent_its_trace_as_every_replay_will(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = project_with_spec(tmp_path)
    code, output = record(project, upstream, "--verify")
    assert code == 0, output
    assert "specs: look.trace.json, look.yaml" in seen(upstream)


def test_a_failed_first_record_leaves_no_trace_file(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = project_with_spec(tmp_path)
    spec = project / "specs" / "look.yaml"
    spec.write_text(spec.read_text().replace("contains specs", "contains nothing-of-the-sort"))
    code, output = record(project, upstream)
    assert code == 1, output
    assert "look.trace.json" in seen(upstream)  # the agent saw the place held...
    assert not (project / "specs" / "look.trace.json").exists()  # ...and it is given back


def test_a_rerecorded_trace_replays_in_a_fresh_checkout_without_flowproof_runs(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = project_with_spec(tmp_path)
    assert record(project, upstream)[0] == 0
    code, output = record(project, upstream)  # .flowproof/ is there from the first record
    assert code == 0, output
    assert "project: .flowproof/, specs/" in seen(upstream)
    upstream.stop()
    checkout = tmp_path / "ci" / "project"  # a clone: no .flowproof/, it is git-ignored
    shutil.copytree(project, checkout, ignore=shutil.ignore_patterns(".flowproof"))
    replay = flowproof("run", "specs", cwd=checkout)
    assert replay.code == 0, replay.output


def test_verify_keeps_the_git_folder_a_ci_checkout_has(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = project_with_spec(tmp_path, git=True)
    code, output = record(project, upstream, "--verify")
    assert code == 0, output
    assert "project: .flowproof/, .git/, .gitignore, specs/" in seen(upstream)

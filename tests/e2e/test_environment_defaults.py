"""Environment-relative by default: a coding agent whose prompt carries its working directory
(as given, under `~`, and as the slug naming its per-project state), its home and its
temporary directory records with a spec that declares nothing, and replays green from a copy
of the project at another path, with another HOME and TMPDIR, the upstream stopped. Opting the
working directory out (`normalize: [no-cwd]`) makes the same replay fail at that path, and
opting the home directory out makes record refuse the trace naming the entry to drop. A trace
from before the defaults replays with its declared facts alone, and a HOME too short to replace
is skipped, not refused.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

from tests.conftest import agent_command, flowproof
from tests.e2e.booking import record
from tests.e2e.test_fidelity import NOTES, read_the_notes
from tests.upstream.scripted import ScriptedUpstream, text


def write_project(project: Path, normalize: str | None = None, state: str = "1") -> Path:
    """A project whose spec is written as a new user would: no `normalize:` line. `state`:
    AGENT_STATE, "0" for the agent without its state directory and temporary directory."""
    (project / "work").mkdir(parents=True, exist_ok=True)
    (project / "work" / "notes.txt").write_text(NOTES)
    spec = project / "specs" / "notes.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        textwrap.dedent(f"""\
        name: Coding agent reads its notes
        app: agent
        agent:
          command: "{agent_command("coding_agent.py")}"
          cwd: ../work
          env:
            AGENT_STATE: "{state}"
        {f"normalize: {normalize}" if normalize else ""}
        steps:
          - prompt: What do my notes say?
          - assert_tool_call: read_file where path contains notes.txt
          - assert: reply contains blocked
        """)
    )
    return spec


def machine(root: Path, name: str) -> dict[str, str]:
    """HOME and TMPDIR of one machine, both under root."""
    for directory in ("home", "tmp"):
        (root / f"{directory}-{name}").mkdir(parents=True, exist_ok=True)
    return {"HOME": str(root / f"home-{name}"), "TMPDIR": str(root / f"tmp-{name}"), "TZ": "UTC"}


def record_notes(project: Path, upstream: ScriptedUpstream, env: dict[str, str]) -> str:
    upstream.script = [read_the_notes, text("Your notes: the release is blocked on a test.")]
    result = record(project, upstream, **env)
    upstream.stop()
    assert result.code == 0, result.output
    return (project / "specs" / "notes.trace.json").read_text()


def replay_moved(project: Path, root: Path) -> tuple[Path, int, str]:
    """Replay from a copy at another path, on another machine; the original is gone."""
    copy = root / "elsewhere" / "checkout"
    shutil.copytree(project, copy, symlinks=True)
    shutil.rmtree(project)
    result = flowproof("run", "specs", cwd=copy, env=machine(root, "b"))
    return copy, result.code, result.output


def test_a_spec_without_normalize_replays_at_another_path_home_and_tmpdir(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    env = machine(tmp_path, "a")
    project = Path(env["HOME"]) / "src" / "project"  # inside HOME: printed under `~` too
    write_project(project)
    trace_text = record_notes(project, upstream, env)

    work = str((project / "work").resolve())
    slug = re.sub(r"[^A-Za-z0-9]", "-", work)
    for recorded in (work, slug, env["HOME"], env["TMPDIR"]):
        assert recorded not in trace_text, f"{recorded} reached the trace"
    trace = json.loads(trace_text)
    assert trace["format_version"] == 5
    assert trace["normalized_by_default"] == ["cwd", "home", "tmpdir"]
    system = trace["lanes"]["model"][0]["request"]["messages"][0]["content"]
    assert system.endswith(
        "\nScratch directory: {{flowproof.tmpdir}}\n"
        "Project: {{flowproof.cwd}}\n"
        "Memory: ~/.agent/projects/-{{flowproof.cwd.slug}}/memory.md "
        "(project id {{flowproof.cwd.slug}})\n"
        "Settings: {{flowproof.home}}/.agent/settings.json"
    ), system

    copy, code, output = replay_moved(project, tmp_path)
    assert code == 0, output
    assert "2 of 2 turns served" in output
    report = json.loads(next((copy / ".flowproof" / "runs").glob("*/report.json")).read_text())
    flow = report["flows"][-1]
    assert flow["normalized"] == ["cwd", "home", "tmpdir"]
    # The served tool call named the copy's working directory, and the agent read it there.
    assert flow["timeline"][1]["tool_results"] == [{"tool": "read_file", "content": NOTES}]


def test_opting_the_working_directory_out_makes_the_moved_replay_fail_at_that_path(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = tmp_path / "project"
    write_project(project, normalize="[no-cwd]")
    trace_text = record_notes(project, upstream, machine(tmp_path, "a"))
    work = str((project / "work").resolve())
    assert json.loads(trace_text)["normalized_by_default"] == ["home", "tmpdir"]
    assert f"Working directory: {work}\\n" in trace_text

    _, code, output = replay_moved(project, tmp_path)
    assert code == 1, output
    assert "request 1 matches no recorded turn (compared with recorded turn 1)" in output
    # The working directory is where the two differ, each side shown as it is.
    assert "messages[0].content: texts differ from character" in output
    assert '/project/work\\nHome: {{flowproof.home}}\\nTo"…, replayed' in output
    assert "/elsewhere/checkout/work\\nHome: {{flowproo" in output


def test_opting_the_home_directory_out_makes_record_name_the_entry_to_drop(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = tmp_path / "project"
    spec = write_project(project, normalize="[no-home]")
    # A home under /home/ is what the lint knows as one; it need not exist for the agent.
    env = {**machine(tmp_path, "a"), "HOME": "/home/flowproof-e2e-user"}
    upstream.script = [read_the_notes, text("Your notes: the release is blocked on a test.")]
    result = record(project, upstream, **env)
    assert result.code == 1, result.output
    assert (
        "the trace would hold an absolute home-directory path at "
        "lanes.model[0].request.messages[0].content, so it was not written: the flow opts out "
        f"of normalising the home directory ({spec.relative_to(project)}:8: no-home); drop "
        "that entry so the home directory is recorded as {{flowproof.home}}"
    ) in result.output
    assert "remove it from what the agent sends" not in result.output
    assert not (project / "specs" / "notes.trace.json").exists()


def test_a_trace_from_before_the_defaults_is_matched_as_it_was_recorded(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """A format-3 trace lists no default facts: its raw HOME and TMPDIR still match, and only
    its declared `cwd` is normalised, by the rule it was recorded with."""
    project = tmp_path / "project"
    env = machine(tmp_path, "a")
    spec = write_project(project, normalize="[cwd, no-home, no-tmpdir]", state="0")
    record_notes(project, upstream, env)
    trace_path = project / "specs" / "notes.trace.json"
    document = json.loads(trace_path.read_text())
    assert env["HOME"] in json.dumps(document)  # the raw home an older flowproof kept
    del document["normalized_by_default"]
    trace_path.write_text(json.dumps({**document, "format_version": 3}, indent=2))
    spec.write_text(spec.read_text().replace("[cwd, no-home, no-tmpdir]", "[cwd]"))

    result = flowproof("run", "specs", cwd=project, env=env)
    assert result.code == 0, result.output
    assert "2 of 2 turns served" in result.output


def test_a_home_too_short_to_replace_is_skipped_not_refused(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """HOME=/ cannot be replaced safely; nobody asked for it, so record goes on without it."""
    project = tmp_path / "project"
    write_project(project)
    record_notes(project, upstream, {**machine(tmp_path, "a"), "HOME": "/"})
    report = json.loads(next((project / ".flowproof" / "runs").glob("*/report.json")).read_text())
    assert report["flows"][-1]["normalized"] == ["cwd", "tmpdir"]

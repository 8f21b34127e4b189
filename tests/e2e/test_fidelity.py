"""Real agents replay as written, tomorrow and on another machine (issue 16, points 1-4).

A coding agent whose prompt carries its working directory, its home and today's date records
once, then replays green from a copy of the project at another path, with another HOME and a
TZ that makes it another day, the original checkout gone and the upstream stopped; the same
replay with the working directory opted out (`no-cwd`) fails at that path. An agent that sends a fresh id per run replays
green with `ignore_fields:` and fails without it. Record forwards the query string and the
providers' headers, and stores neither.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

from tests.conftest import agent_command, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, record, write_spec
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

NOTES = "the release is blocked on the flaky login test\n"


def coding_spec(project: Path, normalize: str | None = "[cwd, home, date]") -> Path:
    spec = textwrap.dedent(f"""\
        name: Coding agent reads its notes
        app: agent
        agent:
          command: "{agent_command("coding_agent.py")}"
          cwd: ../work
        {f"normalize: {normalize}" if normalize else ""}
        steps:
          - prompt: What do my notes say?
          - assert_tool_call: read_file where path contains notes.txt
          - assert: reply contains blocked
        """)
    path = project / "specs" / "notes.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec)
    return path


def read_the_notes(body: dict) -> dict:
    """The model: read `notes.txt` in the working directory the system prompt names."""
    cwd = re.search(r"Working directory: (\S+)", body["messages"][0]["content"])
    assert cwd is not None, body
    return calls(tool_call("read_file", {"path": f"{cwd.group(1)}/notes.txt"}))


def other_day_tz() -> str:
    """A POSIX TZ whose local date is not today's UTC date, whatever the hour."""
    return "FPT-14" if datetime.now(UTC).hour >= 12 else "FPT+12"


def local_date(tz: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import datetime; print(datetime.date.today())"],
        env={"TZ": tz},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_project(root: Path) -> Path:
    project = root / "project"
    (project / "work").mkdir(parents=True)
    (project / "work" / "notes.txt").write_text(NOTES)
    (root / "home-a").mkdir()
    (root / "home-b").mkdir()
    coding_spec(project)
    return project


def recorded_project(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    upstream.script = [read_the_notes, text("Your notes: the release is blocked on a test.")]
    project = make_project(tmp_path)
    result = record(project, upstream, HOME=str(tmp_path / "home-a"), TZ="UTC")
    assert result.code == 0, result.output
    upstream.stop()
    return project


def moved(project: Path, tmp_path: Path) -> Path:
    """A copy of the project at another path; the original is gone."""
    copy = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(project, copy, symlinks=True)
    shutil.rmtree(project)
    return copy


def replay_elsewhere(copy: Path, tmp_path: Path, tz: str) -> tuple[int, str]:
    result = flowproof(
        "run",
        "specs",
        "--junit",
        str(tmp_path / "junit.xml"),
        cwd=copy,
        env={"HOME": str(tmp_path / "home-b"), "TZ": tz},
    )
    return result.code, result.output


def test_an_environment_relative_trace_replays_at_another_path_home_and_day(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = recorded_project(tmp_path, upstream)
    record_cwd = str((project / "work").resolve())
    trace_text = (project / "specs" / "notes.trace.json").read_text()
    trace = json.loads(trace_text)
    system = trace["lanes"]["model"][0]["request"]["messages"][0]["content"]
    today = datetime.now(UTC).date().isoformat()
    assert system.startswith(
        "You are a coding agent.\nWorking directory: {{flowproof.cwd}}\nHome: {{flowproof.home}}"
        "\nToday's date: {{flowproof.date}} ({{flowproof.weekday}})\nFiles here: notes.txt"
    ), system
    assert record_cwd not in trace_text and today not in trace_text
    # The model's tool call was stored with the placeholder, and the agent was given the path.
    stored_call = trace["lanes"]["model"][0]["response"]["choices"][0]["message"]["tool_calls"][0]
    assert stored_call["function"]["arguments"] == '{"path": "{{flowproof.cwd}}/notes.txt"}'
    assert trace["lanes"]["model"][1]["request"]["messages"][-1]["content"] == NOTES
    assert (
        upstream.received[0]
        .body["messages"][0]["content"]
        .startswith(f"You are a coding agent.\nWorking directory: {record_cwd}\n")
    ), "the upstream model sees the request as the agent sent it"

    tz = other_day_tz()
    assert local_date(tz) != today, "the replay must run on another local day"
    copy = moved(project, tmp_path)
    code, output = replay_elsewhere(copy, tmp_path, tz)
    assert code == 0, output
    assert "2 of 2 turns served" in output
    report = json.loads(next((copy / ".flowproof" / "runs").glob("*/report.json")).read_text())
    flow = report["flows"][-1]
    assert flow["normalized"] == ["cwd", "home", "date", "tmpdir"]  # tmpdir: by default
    # The served tool call named today's checkout, and the agent read the notes there.
    assert flow["timeline"][1]["tool_results"] == [{"tool": "read_file", "content": NOTES}]
    assert "normalised: cwd, home, date, tmpdir" in (tmp_path / "junit.xml").read_text()

    coding_spec(copy, normalize="[no-cwd]")
    code, output = replay_elsewhere(copy, tmp_path, tz)
    assert code == 1, output
    assert "request 1 matches no recorded turn (compared with recorded turn 1)" in output
    # The texts differ inside the working directory, whatever prefix of it (the temporary
    # directory, normalised by default) the two spellings share.
    start = len("You are a coding agent.\nWorking directory: ")
    differ = re.search(r"messages\[0\]\.content: texts differ from character (\d+):", output)
    assert differ is not None, output
    assert start <= int(differ.group(1)) < start + len(str(copy.resolve() / "work")), output
    assert "\\nWorking directory: {{flowproof.cwd}}\\nHome" in output  # recorded


def test_a_per_run_id_replays_with_ignore_fields_and_diverges_without(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    spec = write_spec(
        tmp_path,
        command=agent_command("anthropic_agent.py"),
        agent_env={"AGENT_SESSION": "1"},
    )
    declared = spec.read_text().replace("steps:", "ignore_fields:\n  - metadata.user_id\nsteps:")
    spec.write_text(declared)
    assert record(tmp_path, upstream).code == 0
    upstream.stop()
    recorded_ids = {r.body["metadata"]["user_id"] for r in upstream.received}
    assert len(recorded_ids) == 1
    trace = json.loads((tmp_path / "specs" / "booking.trace.json").read_text())
    stored = [turn["request"]["metadata"]["user_id"] for turn in trace["lanes"]["model"]]
    assert stored == [*recorded_ids] * 3, "an ignored field is stored as recorded"

    result = flowproof("run", "specs", "--markdown", str(tmp_path / "comment.md"), cwd=tmp_path)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr
    assert "matched ignoring: `metadata.user_id`" in (tmp_path / "comment.md").read_text()

    spec.write_text(declared.replace("ignore_fields:\n  - metadata.user_id\n", ""))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "request 1 matches no recorded turn (compared with recorded turn 1)" in result.stderr
    (recorded_id,) = recorded_ids
    assert f'metadata.user_id: recorded "{recorded_id}", replayed "user_' in result.stderr


def test_a_forbidden_ignored_path_is_a_configuration_error(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    spec.write_text(
        spec.read_text().replace(
            "steps:", "ignore_fields:\n  - metadata.user_id\n  - messages[*].content\nsteps:"
        )
    )
    line = spec.read_text().splitlines().index("  - messages[*].content") + 1
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2, result.output
    assert (
        f"specs/booking.yaml:{line}: ignore_fields[1]: 'messages[*].content' is inside "
        "`messages`, part of what the model is asked (the conversation, its tools, the model); "
        "matching stays strict there"
    ) in result.stderr


def test_an_agent_cwd_holding_the_specs_is_a_configuration_error(tmp_path: Path) -> None:
    spec = coding_spec(tmp_path, normalize=None)
    spec.write_text(spec.read_text().replace("cwd: ../work", "cwd: ."))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2, result.output
    assert (
        f"specs/notes.yaml:5: agent.cwd {tmp_path}/specs holds its trace "
        f"(specs/notes.trace.json), which flowproof writes"
    ) in result.stderr


def test_record_forwards_the_query_and_provider_headers_and_stores_neither(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT * 2  # booking.yaml, then openai.yaml
    write_spec(
        tmp_path,
        command=agent_command("anthropic_agent.py"),
        agent_env={"AGENT_BETA_API": "1", "AGENT_BETA": "fidelity-2026-12-01"},
    )
    write_spec(
        tmp_path,
        name="openai",
        agent_env={"OPENAI_ORG_ID": "org-fidelity-7", "OPENAI_PROJECT_ID": "proj_fidelity_9"},
    )
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    anthropic = [r for r in upstream.received if r.path == "/v1/messages"]
    openai = [r for r in upstream.received if r.path == "/v1/chat/completions"]
    assert len(anthropic) == 3 and len(openai) == 3
    assert {r.query for r in anthropic} == {"beta=true"}
    assert {r.headers.get("anthropic-beta") for r in anthropic} == {"fidelity-2026-12-01"}
    assert {r.headers.get("openai-organization") for r in openai} == {"org-fidelity-7"}
    assert {r.headers.get("openai-project") for r in openai} == {"proj_fidelity_9"}
    assert {r.method for r in upstream.received} == {"POST"}
    for trace in (tmp_path / "specs").glob("*.trace.json"):
        written = trace.read_text()
        for stored in (
            "fidelity-2026-12-01",
            "anthropic-beta",
            "beta=true",
            "org-fidelity-7",
            "proj_fidelity_9",
            "openai-project",
            KEY,
        ):
            assert stored not in written, f"{trace.name} holds {stored}"

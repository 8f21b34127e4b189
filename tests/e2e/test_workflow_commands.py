"""No line flowproof prints starts a GitHub workflow command but its own annotations, whatever
a spec file, a flow, a control id, a request path or a model reply holds.

The runner reads every line of a step's stdout AND stderr, and acts on one whose first non-blank
characters are `::` (`::warning`, `::add-mask::`, `::stop-commands::`). One project full of
hostile names goes through every command that prints (record, run, report, audit, trace lint,
diff, doctor, github comment) with GITHUB_ACTIONS set, and every line of every output is read
as the runner would read it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.action.fake_github import OWNER, REPO, TOKEN, FakeGitHub
from tests.conftest import CliResult, agent_command, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, write_spec
from tests.upstream.scripted import ScriptedUpstream, text

REPLY = "Booked KQ311 ##[warning]the older form.\n::warning title=model::from the model's reply"
FLOW_NAME = "evil\n::warning title=name::from a flow name"
CONTROL = "sec.x\n::warning title=control::from a control id"
BOOKED = "a,title=Pwned,line=99"
"""A spec file name that, unescaped in `file=`, would add properties of its own."""
UNRECORDED = ("b\n::warning title=file::from a file name", "c%0A::warning title=pct::x:y")
PATH_SPEC = "d:path"
ORPHAN = "e\n::warning title=lint::from a trace name.trace.json"
# The runner splits lines as .NET does: CRLF, CR and LF each end one.
_LINES = re.compile("\r\n|\r|\n")
_OURS = re.compile(r"::(error|notice) ([a-z]+=[^,:]*(?:,[a-z]+=[^,:]*)*)::[^\r\n]*")


def runner_lines(result: CliResult) -> list[str]:
    return _LINES.split(result.stdout) + _LINES.split(result.stderr)


def unescape(value: str) -> str:
    for escape, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(escape, char)
    return value


def commands_in(result: CliResult, specs: set[str]) -> list[dict[str, str]]:
    """The properties of each of flowproof's own annotations; fails on any other line the
    runner would take for a command (one starting `::`, or holding the older form `##[`
    anywhere), and on a `file=` that is not one of `specs` exactly."""
    found = []
    for line in runner_lines(result):
        if not line.lstrip().startswith("::"):
            assert "##[" not in line, f"a line holds an older-form workflow command: {line!r}"
            continue
        ours = _OURS.fullmatch(line)
        assert ours, f"a line starts a workflow command: {line!r}"
        properties = dict(pair.split("=", 1) for pair in ours[2].split(","))
        properties = {key: unescape(value) for key, value in properties.items()}
        assert set(properties) <= {"file", "line", "title"}, line
        if "file" in properties:
            assert properties["file"] in specs, f"file= names no spec: {line!r}"
        found.append(properties)
    return found


def guarded(result: CliResult, title: str) -> bool:
    """Whether the hostile command titled `title` reached the output, set behind `  | ` or
    inside JSON quotes (so the test shows the hostile text did get that far)."""
    return any(
        f"::warning title={title}::" in line and not line.lstrip().startswith("::")
        for line in runner_lines(result)
    )


def write_project(tmp_path: Path) -> set[str]:
    specs = tmp_path / "specs"
    write_spec(
        tmp_path,
        name=BOOKED,
        title=json.dumps(FLOW_NAME),
        extra_steps="  - assert: reply contains KQ311\n",
    )
    booked = specs / f"{BOOKED}.yaml"
    booked.write_text(f"control: {json.dumps(CONTROL)}\n" + booked.read_text())
    for name in UNRECORDED:
        shutil.copy(booked, specs / f"{name}.yaml")
    write_spec(tmp_path, name=PATH_SPEC, command=agent_command("hostile_path_agent.py"))
    return {f"specs/{name}.yaml" for name in (BOOKED, *UNRECORDED, PATH_SPEC)}


def test_no_output_line_starts_a_workflow_command(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    specs = write_project(tmp_path)
    summary = tmp_path / "summary.md"
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    upstream.script = [*BOOKING_SCRIPT[:-1], text(REPLY)]

    recorded = flowproof(
        "record",
        f"specs/{BOOKED}.yaml",
        f"specs/{PATH_SPEC}.yaml",
        cwd=tmp_path,
        env={**actions, "FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY},
    )
    assert recorded.code == 1, recorded.output  # the request path cannot be served
    commands_in(recorded, specs)
    assert guarded(recorded, "path") and guarded(recorded, "name")
    headline = f"PASS  {json.dumps(FLOW_NAME)}  (specs/{BOOKED}.yaml) · 3 turns recorded"
    assert headline in recorded.stderr  # a hostile name is quoted: the headline stays one line

    booked = tmp_path / "specs" / f"{BOOKED}.yaml"
    booked.write_text(booked.read_text() + "  - assert: reply contains cancelled\n")
    ran = flowproof("run", "specs", cwd=tmp_path, env=actions)
    assert ran.code == 1, ran.output
    annotations = commands_in(ran, specs)
    assert {a["file"] for a in annotations} == specs  # one per spec, each file named exactly
    assert guarded(ran, "model") and guarded(ran, "name") and guarded(ran, "file")
    assert "Booked KQ311 ##\\[warning]the older form." in ran.stderr
    assert "::warning title=model::" in summary.read_text()  # a file, not a runner line

    reported = flowproof(
        "report", "--markdown", "r.md", "--html", "r.html", "--junit", "r.xml", cwd=tmp_path
    )
    assert reported.code == 0, reported.output
    commands_in(reported, specs)

    audited = flowproof("audit", "--markdown", "audit.md", cwd=tmp_path, env=actions)
    assert audited.code == 1, audited.output  # the control's latest run failed
    commands_in(audited, specs)
    assert guarded(audited, "control")
    assert f"! {json.dumps(CONTROL)} FAIL" in audited.stderr

    trace = tmp_path / "specs" / f"{BOOKED}.trace.json"
    shutil.copy(trace, tmp_path / "specs" / ORPHAN)
    linted = flowproof("trace", "lint", "specs", cwd=tmp_path, env=actions)
    assert linted.code == 1, linted.output  # the orphan trace
    commands_in(linted, specs)
    assert guarded(linted, "lint")

    diffed = flowproof("diff", str(trace), f"specs/{ORPHAN}", cwd=tmp_path, env=actions)
    assert diffed.code == 0, diffed.output
    commands_in(diffed, specs)
    assert guarded(diffed, "lint")

    doctored = flowproof(
        "doctor", "--agent", agent_command("hostile_path_agent.py"), cwd=tmp_path, env=actions
    )
    assert doctored.code == 0, doctored.output
    commands_in(doctored, specs)
    assert "POST /v1/x%0A::warning" in doctored.stderr  # doctor shows the path as it was sent


def test_the_comment_command_prints_no_workflow_command_but_its_own(tmp_path: Path) -> None:
    github = FakeGitHub()
    github.start()
    try:
        login = "mallory\n::warning title=login::from what GitHub answered"
        github.add(7, "<!-- flowproof-comment: flowproof -->\nplanted\n", login=login)
        markdown = tmp_path / "comment.md"
        markdown.write_text(f"### flowproof\n\n{REPLY}\n", encoding="utf-8")
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": 7}}))
        env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_API_URL": github.url,
            "GITHUB_REPOSITORY": f"{OWNER}/{REPO}",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_TOKEN": TOKEN,
        }
        done = flowproof("github", "comment", "--markdown", str(markdown), cwd=tmp_path, env=env)
        assert done.code == 0, done.output
        commands_in(done, set())
        assert guarded(done, "login")
        github.forbid_writes = True
        markdown.write_text("### flowproof: changed\n", encoding="utf-8")
        forbidden = flowproof(
            "github", "comment", "--markdown", str(markdown), cwd=tmp_path, env=env
        )
        assert [c["title"] for c in commands_in(forbidden, set())] == ["flowproof"]
    finally:
        github.stop()

"""`flowproof record --verify`: a trace just recorded is replayed as tomorrow's CI will replay
it, and what would stop it is named with the spec line that fixes it.

A real coding agent (the openai SDK) puts its working directory, its home and today's date into
its system prompt. Recorded with only `normalize: [cwd, home]`, verify exits 1 and prints the
whole `normalize:` line the spec needs; with exactly that line, verify exits 0 and the trace
replays from a moved copy with another HOME on another local day, the upstream stopped. A tool
whose output differs between runs is named with its `result:` remedy.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from flowproof.engine.verify import verify_flow
from tests.conftest import ROOT, agent_command, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, record, write_spec
from tests.e2e.test_fidelity import (
    coding_spec,
    make_project,
    moved,
    other_day_tz,
    read_the_notes,
    replay_elsewhere,
)
from tests.upstream.scripted import ScriptedUpstream, text

REPLY = text("Your notes: the release is blocked on a test.")


def record_verify(
    project: Path, upstream: ScriptedUpstream, home: Path, **env: str
) -> tuple[int, str]:
    upstream.script = [read_the_notes, REPLY]
    upstream.received.clear()  # the script is served by position: each record starts it anew
    result = flowproof(
        "record",
        "specs",
        "--verify",
        cwd=project,
        env={
            "FLOWPROOF_AGENT_UPSTREAM": upstream.base_url,
            "FLOWPROOF_AGENT_KEY": KEY,
            "HOME": str(home),
            **env,
        },
    )
    return result.code, result.output


def test_verify_names_the_date_line_and_the_spec_with_it_replays_tomorrow(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    project = make_project(tmp_path)
    spec = coding_spec(project, normalize="[cwd, home]")
    code, output = record_verify(project, upstream, tmp_path / "home-a")
    assert code == 1, output
    assert "it would not replay:" in output
    assert "the date changed: request 1 at messages[0].content" in output
    assert "Declare them in the spec (docs/specs.md):\n" in output
    printed = re.search(r"^\s+(normalize: \[.*\])$", output, re.MULTILINE)
    assert printed is not None and printed.group(1) == "normalize: [cwd, home, date]", output

    # The trace was written (the record passed); replayed on another day, `run` names the fix.
    replayed = flowproof("run", "specs", cwd=project, env={"TZ": other_day_tz()})
    assert replayed.code == 1, replayed.output
    assert "remedy: declare `normalize: [date]` in the spec, then record again" in replayed.stderr

    spec.write_text(spec.read_text().replace("normalize: [cwd, home]", printed.group(1)))
    code, output = record_verify(project, upstream, tmp_path / "home-a")
    assert code == 0, output
    assert "no upstream: it replays" in output
    upstream.stop()
    code, output = replay_elsewhere(moved(project, tmp_path), tmp_path, other_day_tz())
    assert code == 0, output


def test_verify_names_the_result_remedy_for_a_tool_whose_output_differs_between_runs(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """Two divergences in two requests: verify declares the first (the date) in its copy and
    replays again to find the second (the tool's output)."""
    project = make_project(tmp_path)
    coding_spec(project, normalize="[cwd, home]")
    code, output = record_verify(project, upstream, tmp_path / "home-a", AGENT_WALL_TIME="1")
    assert code == 1, output
    assert "  the date changed: request 1 at messages[0].content" in output
    assert "  the output of tool read_file differs between runs" in output
    assert "not answered by a declaration" not in output
    assert (
        "Declare them in the spec (docs/specs.md):\n  normalize: [cwd, home, date]\n  tools:\n"
        "    - name: read_file\n      result: <the output the agent should see>\n"
        "then record again"
    ) in output


def test_verify_names_the_ignored_field_for_a_per_run_id_and_run_names_it_too(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(
        tmp_path, command=agent_command("anthropic_agent.py"), agent_env={"AGENT_SESSION": "1"}
    )
    result = flowproof(
        "record",
        "specs",
        "--verify",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY},
    )
    assert result.code == 1, result.output
    assert "  a per-run id at metadata.user_id: request 1 at metadata.user_id = '" in result.output
    assert "Declare them in the spec (docs/specs.md):\n  ignore_fields: [metadata.user_id]\n" in (
        result.output
    )
    upstream.stop()
    # The trace was written (the record passed); its replay names the same remedy.
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "remedy: declare `ignore_fields: [metadata.user_id]` in the spec\n" in result.stderr, (
        result.stderr
    )


def test_verify_reports_a_moved_working_directory_unless_it_is_normalised_already(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """The working directory may be normalised without being declared; either the replay
    from the copy passes, or verify names the directory and `normalize: [cwd]`."""
    project = make_project(tmp_path)
    coding_spec(project, normalize="[home, date]")
    code, output = record_verify(project, upstream, tmp_path / "home-a")
    if code == 0:
        assert "no upstream: it replays" in output
        return
    assert "  the working directory moved: request 1 at messages[0].content" in output, output
    assert "  normalize: [home, date, cwd]" in output, output


def test_a_spec_linked_by_absolute_path_is_verified_against_its_trace_and_left_unchanged(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """specs/notes.yaml is a symbolic link to the project's flows/notes.yaml, by absolute path.
    Verify replays the trace record wrote beside the link, and declares the date in its copy by
    replacing the copied link: never by writing through it into the project's spec."""
    project = make_project(tmp_path)
    linked = coding_spec(project, normalize="[cwd, home]")
    (project / "flows").mkdir()
    real = project / "flows" / "notes.yaml"
    linked.rename(real)
    linked.symlink_to(real.resolve())
    written = real.read_text()
    code, output = record_verify(project, upstream, tmp_path / "home-a")
    assert code == 1, output
    assert "the date changed: request 1 at messages[0].content" in output
    assert "not answered by a declaration" not in output
    assert "normalize: [cwd, home, date]" in output
    assert linked.is_symlink() and real.read_text() == written
    assert (project / "specs" / "notes.trace.json").is_file()
    assert not (project / "flows" / "notes.trace.json").exists()


def test_verify_reads_a_trace_of_the_first_format_migrated_and_rewrites_it_through_the_store(
    tmp_path: Path, upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`record --verify` replays the trace it has just written; this drives the same
    verification (engine/verify.py, whose replays are the real engine in a copy) on a trace
    kept in format 1 (model turns under `turns`). Its date is answered by a `normalize:` entry,
    so the copied trace is read migrated, rewritten with placeholders, and replayed again."""
    project = make_project(tmp_path)
    spec = coding_spec(project, normalize="[cwd, home]")
    upstream.script = [read_the_notes, REPLY]
    recorded = record(project, upstream, HOME=str(tmp_path / "home-a"), TZ="UTC")
    assert recorded.code == 0, recorded.output
    upstream.stop()
    trace = project / "specs" / "notes.trace.json"
    current = json.loads(trace.read_text())
    turns = [
        {key: turn[key] for key in ("dialect", "request", "response")}
        for turn in current["lanes"]["model"]
    ]
    first_format = {"format_version": 1, "flowproof_version": "0.1.0", "turns": turns}
    trace.write_text(json.dumps(first_format, indent=2))

    environ = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home-a")}
    monkeypatch.chdir(project)  # where `flowproof record` is started
    found = verify_flow(spec.relative_to(project), environ, Path.cwd())
    lines = "\n".join(found.render())
    assert [finding.label for finding in found.findings] == ["the date changed"], lines
    assert found.unexplained == "" and found.tools == [], lines
    assert "  normalize: [cwd, home, date]" in lines
    assert json.loads(trace.read_text()) == first_format  # the project's own file is as it was

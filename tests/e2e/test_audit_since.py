"""`flowproof audit --since RUN_ID|DATE` and `audit --json`, over run records that real
`flowproof record` and `flowproof run` wrote.

The history every test here reads, built once:

    run 1 (record)  sec.booking pass, sec.refunds pass, sec.legacy pass, plain.yaml (no control)
    run 2 (replay)  the same, all pass
    run 3 (replay)  legacy.yaml deleted, plain.yaml declares sec.plain, refunds diverges: fail
    run 4 (replay)  refunds fixed: everything passes
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import ROOT, CliResult, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

SCHEMA = json.loads((ROOT / "docs" / "schemas" / "audit.schema.json").read_text(encoding="utf-8"))
RUNS = Path(".flowproof") / "runs"


@dataclass(frozen=True)
class History:
    project: Path
    runs: list[dict]
    """The four run records, oldest first."""

    def audit(self, *args: str, **env: str) -> CliResult:
        return flowproof("audit", *args, cwd=self.project, env=env)


def control_spec(project: Path, name: str, control: str | None, bug: str | None = None) -> None:
    spec = write_spec(project, name=name, agent_env={"AGENT_BUG": bug} if bug else None)
    if control:
        spec.write_text(spec.read_text() + f"control: {control}\n")


def next_second() -> None:
    """Run ids and start times have whole seconds: each run starts in a second of its own, so
    the runs sort in the order they ran and a date between two of them names one."""
    time.sleep(1.05 - time.time() % 1)


def replay(project: Path, expected: int) -> None:
    next_second()
    result = flowproof("run", "specs", cwd=project)
    assert result.code == expected, result.output


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    project = tmp_path_factory.mktemp("audit-since")
    for name in ("booking", "refunds", "legacy"):
        control_spec(project, name, f"sec.{name}")
    control_spec(project, "plain", None)
    upstream = ScriptedUpstream()
    upstream.start()
    try:
        upstream.script = BOOKING_SCRIPT * 4
        recorded = record(project, upstream)
        assert recorded.code == 0, recorded.output
    finally:
        upstream.stop()
    replay(project, 0)
    (project / "specs" / "legacy.yaml").unlink()
    (project / "specs" / "legacy.trace.json").unlink()
    control_spec(project, "plain", "sec.plain")
    control_spec(project, "refunds", "sec.refunds", bug="rewrite-flight-id")
    replay(project, 1)
    control_spec(project, "refunds", "sec.refunds")
    replay(project, 0)
    paths = sorted((project / RUNS).glob("*/report.json"))
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    assert [run["mode"] for run in runs] == ["record", "replay", "replay", "replay"]
    assert [run["exit_code"] for run in runs] == [0, 0, 1, 0]
    yield History(project, runs)


def section(stderr: str) -> list[str]:
    """The lines after `since run ...:`, each with its spaces collapsed."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("since run "))
    return [" ".join(line.split()) for line in lines[start + 1 :]]


def test_since_the_first_run_names_the_added_and_the_removed(history: History) -> None:
    first, second, _, fourth = history.runs
    result = history.audit("--since", first["run_id"], "--runs-dir", str(history.project / RUNS))
    assert f"since run {first['run_id']} ({first['started_at']}):" in result.stderr
    assert section(result.stderr) == [
        f"added sec.plain PASS run {fourth['run_id']}",
        f"removed sec.legacy PASS last evidenced by run {second['run_id']}",
    ], result.stderr  # refunds failed in run 3 and passes again in run 4: no verdict changed
    assert result.code == 0, result.output  # every control passes today


def test_since_a_date_is_the_last_run_started_at_or_before_it_and_names_a_changed_verdict(
    history: History,
) -> None:
    _, second, third, fourth = history.runs
    started = datetime.fromisoformat(third["started_at"])
    # A second after run 3 started: the baseline is run 3, refunds failing.
    moment = (started + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert moment < fourth["started_at"]
    result = history.audit("--since", moment, "--markdown", "since.md", "--html", "since.html")
    assert f"since run {third['run_id']} ({third['started_at']}):" in result.stderr
    assert section(result.stderr) == [
        f"verdict changed sec.refunds FAIL → PASS (was run {third['run_id']}, "
        f"now run {fourth['run_id']})"
    ], result.stderr
    # A verdict that changed does not change the exit code: nothing needs attention today.
    assert result.code == 0, result.output
    markdown = (history.project / "since.md").read_text(encoding="utf-8")
    assert (
        "#### Verdict changed, was → now (1)\n\n"
        f"- `sec.refunds`: fail → ✅ pass (run `{third['run_id']}` → run `{fourth['run_id']}`)\n"
    ) in markdown
    assert "#### Added (0)\n\n- none\n" in markdown and "#### Removed (0)\n\n- none\n" in markdown
    html = (history.project / "since.html").read_text(encoding="utf-8")
    changed = html[html.index('<ul class="changed">') :]
    assert '<code>sec.refunds</code>: <span class="fail">fail</span> → ' in changed
    # A moment a second before run 3 started: the baseline is run 2, everything passing.
    before = (started - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    assert before >= second["started_at"].replace("Z", "+00:00")
    earlier = history.audit("--since", before)
    assert f"since run {second['run_id']} " in earlier.stderr
    assert section(earlier.stderr)[0] == f"added sec.plain PASS run {fourth['run_id']}"


def test_since_a_date_after_every_run_changes_nothing(history: History) -> None:
    result = history.audit("--since", "2999-01-01", "--markdown", "nothing.md")
    assert result.code == 0, result.output
    latest = history.runs[-1]
    assert f"no change since run {latest['run_id']} ({latest['started_at']})" in result.stderr
    markdown = (history.project / "nothing.md").read_text(encoding="utf-8")
    assert "Nothing changed: no control added or removed, no verdict changed." in markdown


def test_since_a_failing_run_keeps_the_exit_code_of_the_latest_table(history: History) -> None:
    # The verdicts of today's table decide the exit code, --since or not.
    runs_dir = history.project / RUNS
    third = history.runs[2]["run_id"]
    only_three = history.project / "three-runs"
    only_three.mkdir(exist_ok=True)
    for run in history.runs[:3]:
        link = only_three / run["run_id"]
        if not link.exists():
            link.symlink_to(runs_dir / run["run_id"])
    plain = history.audit("--runs-dir", str(only_three))
    since = history.audit("--runs-dir", str(only_three), "--since", history.runs[0]["run_id"])
    assert plain.code == since.code == 1, since.output
    assert section(since.stderr) == [
        f"added sec.plain PASS run {third}",
        f"removed sec.legacy PASS last evidenced by run {history.runs[1]['run_id']}",
        f"verdict changed sec.refunds PASS → FAIL (was run {history.runs[0]['run_id']}, "
        f"now run {third})",
    ], since.stderr


def test_an_unknown_run_id_is_a_usage_error_naming_the_runs_dir(history: History) -> None:
    result = history.audit("--since", "20200101T000000Z-ffffff")
    assert result.code == 2, result.output
    assert result.stderr == (
        "error: --since '20200101T000000Z-ffffff': no run '20200101T000000Z-ffffff' under "
        ".flowproof/runs, and not an ISO date or time (2026-12-01, 2026-12-01T08:00:00Z); the "
        "run ids are the directory names there (`ls .flowproof/runs`), and `flowproof audit` "
        "names the run of each control\n"
    )
    assert result.stdout == ""


def test_a_date_before_every_run_is_a_usage_error(history: History) -> None:
    result = history.audit("--since", "2020-01-01", "--json")
    first = history.runs[0]
    assert result.code == 2, result.output
    assert result.stderr == (
        "error: --since '2020-01-01': no run under .flowproof/runs started at or before "
        f"2020-01-01T00:00:00+00:00; the first of its 4 runs, {first['run_id']}, started at "
        f"{first['started_at']} (the run ids are the directory names: `ls .flowproof/runs`)\n"
    )
    # Under --json the refusal is the one document on stdout (docs/schemas/error.schema.json).
    error = json.loads(result.stdout)["error"]
    assert (error["kind"], error["exit_code"]) == ("config", 2)
    assert error["message"] == result.stderr.removeprefix("error: ").rstrip("\n")


def test_json_is_one_document_on_stdout_valid_against_the_committed_schema(
    history: History,
) -> None:
    first, second, _, fourth = history.runs
    actions = {"GITHUB_ACTIONS": "true"}  # where workflow commands would share stdout
    result = history.audit("--json", "--since", first["run_id"], **actions)
    assert result.code == 0, result.output
    document = json.loads(result.stdout)  # the whole of stdout is the one document
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert result.stdout.count("\n") == 1 and result.stdout.endswith("}\n")  # one line
    assert document["exit_code"] == result.code
    assert document["runs"] == 4 and document["runs_dir"] == ".flowproof/runs"
    assert [(c["id"], c["verdict"]) for c in document["controls"]] == [
        ("sec.booking", "pass"),
        ("sec.legacy", "pass"),
        ("sec.plain", "pass"),
        ("sec.refunds", "pass"),
    ]
    since = document["since"]
    assert (since["run_id"], since["run_at"]) == (first["run_id"], first["started_at"])
    assert [(c["id"], c["run_id"]) for c in since["added"]] == [("sec.plain", fourth["run_id"])]
    assert [(c["id"], c["run_id"]) for c in since["removed"]] == [("sec.legacy", second["run_id"])]
    assert since["changed"] == []
    # The human text still goes to stderr, unchanged by --json.
    assert "4 controls (latest verdict each, from 4 runs):" in result.stderr
    assert "added" in result.stderr and "{" not in result.stderr


def test_json_names_a_changed_verdict_and_without_since_a_null_since(history: History) -> None:
    third = history.runs[2]["run_id"]
    result = history.audit("--json", "--since", third)
    document = json.loads(result.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert document["since"]["changed"] == [
        {
            "id": "sec.refunds",
            "was": "fail",
            "now": "pass",
            "was_run_id": third,
            "now_run_id": history.runs[3]["run_id"],
        }
    ]
    plain = history.audit("--json")
    assert json.loads(plain.stdout)["since"] is None
    assert plain.code == 0


def test_json_is_redacted_as_the_text_is(history: History) -> None:
    # A record key flowproof hides from everything it prints, here equal to a control id.
    result = history.audit(
        "--json", "--since", history.runs[2]["run_id"], OPENAI_API_KEY="sec.refunds"
    )
    assert "sec.refunds" not in result.stdout and "sec.refunds" not in result.stderr
    document = json.loads(result.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert document["since"]["changed"][0]["id"] == "[redacted OPENAI_API_KEY]"

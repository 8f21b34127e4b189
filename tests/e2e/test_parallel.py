"""`run -j N`, `--shard K/N` and `report --merge`: the same verdicts, output, run record and
report as one flow at a time, on a suite that mixes passes, failures, divergences and a spec
error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import CliResult, flowproof
from tests.e2e.booking import write_spec

pytestmark = pytest.mark.e2e


def mixed_suite(recorded: Path) -> Path:
    """Six flows from one recording: three pass, one fails a step, one diverges, one does
    not parse."""
    specs = recorded / "specs"
    trace = (specs / "booking.trace.json").read_text()
    for name in ("a_pass", "c_pass", "f_pass"):
        write_spec(recorded, name=name, title=f"passes {name}")
    write_spec(
        recorded,
        name="b_fail",
        title="fails a step",
        extra_steps="  - assert_tool_call: cancel_booking\n",
    )
    write_spec(
        recorded,
        name="d_diverge",
        title="diverges",
        agent_env={"AGENT_BUG": "rewrite-flight-id"},
    )
    for name in ("a_pass", "b_fail", "c_pass", "d_diverge", "f_pass"):
        (specs / f"{name}.trace.json").write_text(trace)
    (specs / "e_broken.yaml").write_text("name: broken\napp: agent\nagent: [\n")
    (specs / "booking.yaml").unlink()
    (specs / "booking.trace.json").unlink()
    return recorded


def record_of(result: CliResult, cwd: Path) -> dict:
    match = re.search(r"run record: (\S+)", result.stderr)
    assert match, result.output
    return json.loads((cwd / match.group(1)).read_text())


def comparable(record: dict) -> dict:
    """A run record without what differs between any two runs: ids, times, durations."""
    text = json.dumps(record)
    text = re.sub(r'"(run_id|started_at|ended_at)": "[^"]*"', r'"\1": ""', text)
    text = re.sub(r'"duration": [0-9.e-]+', '"duration": 0', text)
    text = re.sub(r'"seconds": [0-9.e-]+', '"seconds": 0', text)
    return json.loads(text)


def output_lines(result: CliResult) -> list[str]:
    skipped = ("run record:", "markdown report:")
    return [line for line in result.stderr.splitlines() if not line.startswith(skipped)]


def test_two_jobs_give_the_verdicts_output_record_and_report_of_one(recorded: Path) -> None:
    suite = mixed_suite(recorded)
    one = flowproof("run", "specs", "-j", "1", "--markdown", "one.md", cwd=suite)
    two = flowproof("run", "specs", "-j", "2", "--markdown", "two.md", cwd=suite)
    assert one.code == two.code == 2, one.output  # the spec error outranks the failures
    assert output_lines(two) == output_lines(one)
    assert "flows: 3 passed, 2 failed, 1 not run (configuration errors)" in one.stderr
    first, second = record_of(one, suite), record_of(two, suite)
    assert [f["spec"] for f in first["flows"]] == [
        "specs/a_pass.yaml",
        "specs/b_fail.yaml",
        "specs/c_pass.yaml",
        "specs/d_diverge.yaml",
        "specs/f_pass.yaml",
    ]
    assert comparable(second) == comparable(first)
    strip = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]+|\d+(\.\d+)? ?s\b")
    one_md = strip.sub("", (suite / "one.md").read_text())
    assert strip.sub("", (suite / "two.md").read_text()) == one_md


def test_shards_merge_into_the_unsharded_report(recorded: Path) -> None:
    suite = mixed_suite(recorded)
    whole = flowproof("run", "specs", "--markdown", "whole.md", cwd=suite)
    runs, specs = [], []
    for shard in (1, 2, 3):
        part = flowproof("run", "specs", "--shard", f"{shard}/3", cwd=suite)
        record = record_of(part, suite)
        runs.append(str(suite / re.search(r"run record: (\S+)", part.stderr).group(1)))
        specs += [f["spec"] for f in record["flows"]] + [e["spec"] for e in record["errors"]]
    assert sorted(specs) == sorted(set(specs))  # disjoint
    assert len(specs) == 6  # and covering
    merged = flowproof("report", "--merge", *runs, "--markdown", "merged.md", cwd=suite)
    assert merged.code == 0, merged.output
    strip = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]+(\+\d{8}T\d{6}Z-[0-9a-f]+)*|\d+(\.\d+)? ?s\b")
    assert strip.sub("", (suite / "merged.md").read_text()) == strip.sub(
        "", (suite / "whole.md").read_text()
    )
    assert whole.code == 2


def test_a_bad_shard_is_a_usage_error(tmp_path: Path) -> None:
    write_spec(tmp_path)
    result = flowproof("run", "specs", "--shard", "4/3", cwd=tmp_path)
    assert result.code == 2
    assert "--shard 4/3: give K/N with 1 ≤ K ≤ N, e.g. --shard 2/4" in result.stderr

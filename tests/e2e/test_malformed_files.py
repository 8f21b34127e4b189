"""Every malformed file gets a verdict (exit 1) or a configuration error (exit 2) naming the file
and the place in it, never an internal error (exit 3): two specs that would share one trace,
tool-call arguments nested past the reader's depth (from a real scripted model at record, and in
a trace at replay), a trace holding a too-deep body, an integer too long for Python, NaN or a
duplicated key (in `run`, `trace lint` and `diff`), an unreadable run record in `report` and
`audit`, and a runs directory that is a dangling symbolic link.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from flowproof.runrecord.model import FORMAT_VERSION as RUN_RECORD_FORMAT
from tests.conftest import CliResult, flowproof
from tests.e2e.booking import KEY, record, write_spec
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

TRACE = Path("specs") / "booking.trace.json"
DEEP_ARGUMENTS = '{"flight": ' + "[" * 2000 + "]" * 2000 + "}"
"""8 KB of tool-call arguments nested 2,000 deep: more than Python's own stack allows."""
JUDGED = "  - assert_tool_call: create_booking where flight.id equals KQ311\n"
UNREADABLE = (
    "create_booking was called once, but its arguments cannot be read (flight[0][0][0][0][0][0]"
    "[0][0][0][0][0]… (116 levels more): too deeply nested (more than 128 levels of objects and "
    'lists)): "{\\"flight\\": [[[['
)


def assert_no_crash(result: CliResult, code: int) -> None:
    """Exit `code`, and no internal error (the agent's own traceback may be quoted: the agents
    here parse the arguments themselves, and fail)."""
    assert result.code == code, result.output
    assert "flowproof: internal error" not in result.output


def test_two_specs_that_would_share_a_trace_are_refused_naming_both(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    spec = write_spec(tmp_path)
    shutil.copyfile(spec, spec.with_suffix(".yml"))
    result = record(tmp_path, upstream)
    assert_no_crash(result, 2)
    for one, other in (("yaml", "yml"), ("yml", "yaml")):
        assert (
            f"      specs/booking.{one}: specs/booking.{other} would record into the same trace, "
            f"{TRACE}; rename one of the two specs (a trace is named after its spec)\n"
        ) in result.stderr, result.stderr
    assert upstream.received == [] and not (tmp_path / TRACE).exists()
    (tmp_path / TRACE).write_text("{}")  # the lint asks which spec replays a trace: both would
    linted = flowproof("trace", "lint", cwd=tmp_path)
    assert_no_crash(linted, 2)
    assert "specs/booking.yaml: specs/booking.yml would record into the same trace" in (
        linted.stderr
    ), linted.stderr


DEEP_SCRIPT = [calls(tool_call("create_booking", DEEP_ARGUMENTS)), text("Booked.")]


def test_deeply_nested_arguments_from_the_model_at_record_are_a_failed_step(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = DEEP_SCRIPT
    write_spec(tmp_path, extra_steps=JUDGED)
    result = record(tmp_path, upstream)
    assert_no_crash(result, 1)
    assert UNREADABLE in result.stderr, result.stderr
    assert not (tmp_path / TRACE).exists()


@pytest.fixture
def deep_trace(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    """A trace whose create_booking arguments (from the model) are nested 2,000 deep, recorded
    by a spec that does not judge them; the spec then gains the step that does."""
    upstream.script = DEEP_SCRIPT
    write_spec(tmp_path)
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    upstream.stop()
    write_spec(tmp_path, extra_steps=JUDGED)
    return tmp_path


def test_deeply_nested_arguments_in_a_trace_are_a_failed_step_at_replay(deep_trace: Path) -> None:
    reports = ("--html", "run.html", "--markdown", "run.md", "--junit", "junit.xml")
    result = flowproof("run", "specs", *reports, cwd=deep_trace)
    assert_no_crash(result, 1)
    assert UNREADABLE in result.stderr, result.stderr
    for report in reports[1::2]:  # rendered, the arguments shown as the text they are
        assert "[[[[[[[[" in (deep_trace / report).read_text(), report


def test_deeply_nested_arguments_in_a_trace_are_a_change_in_diff(deep_trace: Path) -> None:
    good = deep_trace / "good.trace.json"
    shutil.copyfile(deep_trace / TRACE, good)
    good.write_text(good.read_text().replace(json.dumps(DEEP_ARGUMENTS), '"{}"'))
    result = flowproof("diff", str(good), str(TRACE), cwd=deep_trace)
    assert_no_crash(result, 1)
    assert "create_booking (call 1) arguments: " in result.stderr, result.stderr


def test_a_nan_from_the_model_at_record_is_never_served_nor_written(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = [{"content": float("nan")}]  # the scripted server writes it as NaN
    write_spec(tmp_path)
    result = record(tmp_path, upstream)
    assert_no_crash(result, 1)
    assert (
        f"the upstream {upstream.base_url}/chat/completions answered 200 with a body flowproof "
        "does not read (choices[0].message.content: NaN is not a JSON number; write a number or "
        "null): "
    ) in result.stderr, result.stderr
    assert not (tmp_path / TRACE).exists()


def after_first_response(value: str) -> Callable[[str], str]:
    """The trace text with `"n": <value>` as the first key of its first response body."""
    return lambda trace: trace.replace('"response": {', f'"response": {{"n": {value}, ', 1)


LEAKED = '{"dialect": "openai_chat", "request": {"k": "sk-proj-' + "A" * 30 + '"}, "response": {}}'
MALFORMED = {
    "nested-past-the-limit": (
        after_first_response("[" * 900 + "]" * 900),
        "lanes.model[0].response.n[0][0][0][0][0][0][0]… (116 levels more): too deeply nested "
        "(more than 128 levels of objects and lists)",
    ),
    "integer-past-pythons-limit": (
        after_first_response("7" * 5000),
        "lanes.model[0].response.n: an integer of 5000 digits (more than the 4300 Python reads)",
    ),
    "nan": (
        after_first_response("NaN"),
        "lanes.model[0].response.n: NaN is not a JSON number; write a number or null",
    ),
    # The first copy holds a key: a scan of the parsed document (which keeps the last) misses it.
    "duplicated-key": (
        lambda trace: trace.replace('"lanes": {', f'"lanes": {{"model": [{LEAKED}],', 1),
        "lanes.model: the key 'model' appears twice in one object (a reader keeps only one copy)",
    ),
}


@pytest.fixture(params=list(MALFORMED))
def malformed(request: pytest.FixtureRequest, recorded: Path) -> tuple[Path, str]:
    change, problem = MALFORMED[request.param]
    shutil.copyfile(recorded / TRACE, recorded / "good.trace.json")
    trace = recorded / TRACE
    trace.write_text(change(trace.read_text()))
    return recorded, f"{TRACE}: malformed trace: {problem}; re-record it with `flowproof record`\n"


@pytest.mark.parametrize(
    "command",
    [("run", "specs"), ("trace", "lint"), ("diff", "good.trace.json", str(TRACE))],
    ids=["run", "trace-lint", "diff"],
)
def test_a_malformed_trace_is_a_config_error_naming_the_path(
    malformed: tuple[Path, str], command: tuple[str, ...]
) -> None:
    project, message = malformed
    result = flowproof(*command, cwd=project)
    assert_no_crash(result, 2)
    assert message in result.stderr, result.stderr
    assert "sk-proj-" not in result.output


def write_run_record(runs: Path, text: str) -> Path:
    """A hand-made report.json under `runs` (outside the test's directory, whose run records
    are all checked against the schema)."""
    path = runs / "20260101T000000Z-abcdef" / "report.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '{"format_version": 3, "flows": ' + "[" * 3000 + "]" * 3000 + "}",
            "not a readable run record (flows[0][0][0][0][0][0][0][0][0][0][0]… (116 levels "
            "more): too deeply nested (more than 128 levels of objects and lists))",
        ),
        (
            '{"format_version": 3.0, "flows": []}',
            "not a flowproof run record: its format_version is 3.0, not a whole number from 1 to "
            f"{RUN_RECORD_FORMAT}",
        ),
    ],
    ids=["nested-past-the-limit", "format_version-a-float"],
)
@pytest.mark.parametrize(
    "command", [("report", "--html", "r.html"), ("audit",)], ids=["report", "audit"]
)
def test_an_unreadable_run_record_is_a_config_error(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    text: str,
    problem: str,
    command: tuple[str, ...],
) -> None:
    runs = tmp_path_factory.mktemp("elsewhere") / "runs"
    path = write_run_record(runs, text)
    result = flowproof(*command, "--runs-dir", str(runs), cwd=tmp_path)
    assert_no_crash(result, 2)
    assert f"{path}: {problem}" in result.stderr, result.stderr


def test_a_dangling_runs_dir_symlink_is_refused_before_any_flow_runs(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    write_spec(tmp_path)
    (tmp_path / "runs").symlink_to(tmp_path / "gone")
    env = {"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY}
    result = flowproof("record", "specs", "--runs-dir", "runs", cwd=tmp_path, env=env)
    assert_no_crash(result, 2)
    assert result.stderr.endswith(
        f"runs: the runs directory cannot be created: runs is a symbolic link to {tmp_path}/gone, "
        f"which does not exist; create {tmp_path}/gone, or give --runs-dir a directory\n"
    ), result.stderr
    assert upstream.received == [] and not (tmp_path / TRACE).exists()

"""Files flowproof cannot use are a configuration error (exit 2) naming the file and what is
wrong with it, never a traceback: a spec directory or trace path that cannot be written at
record (the previous trace intact), an unwritable run record or report path, a trace whose
header or fields have the wrong type, a YAML alias bomb, a trace that would hold a key.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliResult, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

TRACE = Path("specs") / "booking.trace.json"


def assert_config_error(result: CliResult, message: str) -> None:
    assert result.code == 2, result.output
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.output


def lock(directory: Path, on: bool) -> None:
    """Make `directory` unwritable (or writable again) for whoever runs the tests. chmod means
    nothing to root, so as root it is made immutable instead (`chattr +i`, on ext4, xfs,
    btrfs: not even root may create, rename or remove an entry in it)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i" if on else "-i", str(directory)], check=True)
    else:
        directory.chmod(0o555 if on else 0o755)


@pytest.fixture
def read_only_specs(tmp_path: Path) -> Iterator[Path]:
    specs = tmp_path / "specs"
    if os.geteuid() == 0 and shutil.which("chattr") is None:
        pytest.skip("root without chattr: chmod cannot make a directory read-only for root")
    try:
        lock(specs, True)
    except subprocess.CalledProcessError:
        pytest.skip("chattr +i is not supported on this filesystem")
    try:
        probe = specs / ".probe"
        try:
            probe.write_text("")
        except OSError:
            yield specs
        else:
            probe.unlink()
            pytest.skip("the directory is still writable (a filesystem that ignores the lock)")
    finally:
        lock(specs, False)


@pytest.fixture
def recorded_once(tmp_path: Path, upstream: ScriptedUpstream) -> ScriptedUpstream:
    """specs/booking.yaml recorded, with the upstream ready to answer a second recording."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    assert record(tmp_path, upstream).code == 0
    upstream.received.clear()
    return upstream


def test_an_unwritable_spec_directory_at_record_keeps_the_previous_trace(
    tmp_path: Path, recorded_once: ScriptedUpstream, read_only_specs: Path
) -> None:
    before = (tmp_path / TRACE).read_bytes()
    result = record(tmp_path, recorded_once)
    reason = "Operation not permitted" if os.geteuid() == 0 else "Permission denied"
    assert_config_error(
        result,
        f"ERROR specs/booking.yaml\n      cannot write {TRACE}: no file can be created in specs "
        f"({reason}); any previous booking.trace.json is unchanged; the flow passed, but its "
        "trace was not written\n",
    )
    assert (tmp_path / TRACE).read_bytes() == before
    assert sorted(p.name for p in read_only_specs.iterdir()) == [
        "booking.trace.json",
        "booking.yaml",
    ]


def test_a_directory_where_the_trace_goes_is_a_config_error_at_record(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    (tmp_path / TRACE).mkdir()
    env = {"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY}
    assert_config_error(
        flowproof("record", "specs", cwd=tmp_path, env=env),
        f"cannot write {TRACE}: it cannot be replaced (Is a directory); any previous "
        "booking.trace.json is unchanged; the flow passed, but its trace was not written\n",
    )


def test_an_unwritable_run_record_and_report_path_are_named(recorded: Path) -> None:
    (recorded / "taken").write_text("a file, not a directory")
    result = flowproof("run", "specs", "--runs-dir", "taken/runs", cwd=recorded)
    # Refused before any flow runs: the runs directory is made as a run starts.
    assert_config_error(
        result,
        "taken/runs: the runs directory cannot be created (Not a directory); give --runs-dir "
        "a directory\n",
    )
    assert "Traceback" not in result.output
    result = flowproof("run", "specs", "--html", "taken/run.html", cwd=recorded)
    assert_config_error(
        result,
        "error: cannot write taken/run.html: its directory taken cannot be created (a file is "
        "in the way); any previous run.html is unchanged\n",
    )
    result = flowproof("audit", "--markdown", "taken/audit.md", cwd=recorded)
    assert_config_error(
        result,
        "error: cannot write taken/audit.md: its directory taken cannot be created (a file is "
        "in the way); any previous audit.md is unchanged\n",
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda t: {**t, "format_version": "2"},
            'format_version is "2" (a string), not an integer',
        ),
        (
            lambda t: {**t, "lanes": [1, 2]},
            "lanes is [1, 2] (a list), not an object",
        ),
        (
            lambda t: {
                **t,
                "lanes": {
                    "model": [t["lanes"]["model"][0], {"dialect": "openai_chat", "response": {}}]
                },
            },
            "lanes.model[1] has no 'request' field",
        ),
    ],
    ids=["format_version-a-string", "lanes-a-list", "turn-without-request"],
)
def test_a_malformed_trace_names_the_file_and_the_field(
    recorded: Path, change: Callable[[dict], dict], problem: str
) -> None:
    path = recorded / TRACE
    path.write_text(json.dumps(change(json.loads(path.read_text()))))
    assert_config_error(
        flowproof("run", "specs", cwd=recorded),
        f"ERROR specs/booking.yaml\n      {TRACE}: malformed trace: {problem}; re-record it "
        "with `flowproof record`\n",
    )


def test_a_trace_that_would_hold_a_key_names_the_variable_never_the_value(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """The agent pastes a value into its prompt that happens to be the record key: the store
    guard refuses the trace and says which variable it found. (A key of a provider's shape is
    caught one step earlier by the trace lint, tests/e2e/test_trace_lint.py; this one has no
    known shape, so only the store guard can know it.)"""
    key = "record-credential-without-a-known-shape-7781"
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, agent_env={"AGENT_BUG": "leak-secret", "DB_PASSWORD": key})
    env = {"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": key}
    result = flowproof("record", "specs", cwd=tmp_path, env=env)
    assert_config_error(
        result,
        f"ERROR specs/booking.yaml\n      {TRACE}: refusing to write a trace that contains the "
        "value of FLOWPROOF_AGENT_KEY; the previous trace, if any, is unchanged\n",
    )
    assert key not in result.output
    assert not (tmp_path / TRACE).exists()


BILLION_LAUGHS = """\
name: Billion laughs
app: agent
agent:
  command: "true"
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
steps:
  - prompt: *i
"""
MEASURE = """\
import resource, sys, time
from pathlib import Path
from flowproof.core.errors import SpecError
from flowproof.spec.load import load_spec

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    load_spec(Path(sys.argv[1]))
except SpecError as exc:
    print(exc)
print(time.perf_counter() - started)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def test_a_yaml_alias_bomb_is_refused_at_once_and_cheaply(tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "bomb.yaml"
    spec.parent.mkdir()
    spec.write_text(BILLION_LAUGHS)
    assert len(BILLION_LAUGHS) < 1024  # a billion "lol"s
    message = (
        "specs/bomb.yaml:6: YAML alias *a is not supported in flowproof files; write the value "
        "out in full where it is used (and drop the &a anchor)"
    )
    assert_config_error(flowproof("run", "specs", cwd=tmp_path, timeout=30), f"      {message}\n")
    # Measured in a process of its own: the load alone, its time and its peak memory growth.
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(spec)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    refused, seconds, grown = done.stdout.splitlines()
    assert refused == f"{spec.parent.parent}/{message}"
    assert float(seconds) < 1.0
    assert int(grown) < 100 * 1024 * 1024


def test_an_unwritable_github_step_summary_is_named(recorded: Path) -> None:
    summary = recorded / "no-such-dir" / "summary.md"
    result = flowproof(
        "run",
        "specs",
        cwd=recorded,
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert_config_error(
        result,
        f"error: cannot append the job summary to GITHUB_STEP_SUMMARY={summary}: "
        "No such file or directory",
    )

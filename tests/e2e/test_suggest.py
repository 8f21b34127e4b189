"""`flowproof suggest` on a really recorded booking flow: the steps it prints pass on replay,
`--write` adds them to the spec with its layout kept, and a re-record in which the model
threads another flight id than its search returned fails naming the step."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from tests.conftest import flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

SUGGESTED = [
    {"assert_tool_call": "search_flights"},
    {"assert_tool_call": "create_booking where flight.id equals KQ311"},
    {"assert": "reply contains B-1042"},
]
WRONG_FLIGHT_SCRIPT = [
    BOOKING_SCRIPT[0],
    # The search still returns KQ311 (the spec mocks it); the model books another flight.
    calls(tool_call("create_booking", {"flight": {"id": "KQ999"}, "passenger": {"name": "Casey"}})),
    text("Your flight KQ999 to Nairobi is booked: B-1042."),
]


def recorded_booking(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    upstream.script = BOOKING_SCRIPT
    spec = write_spec(tmp_path)
    with spec.open("a") as handle:  # the author's own comment and key after the steps
        handle.write("  # more steps to come\n\nstrict: false  # calls may come in between\n")
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    return spec


def test_suggested_steps_pass_on_replay_and_catch_a_wrong_id_at_re_record(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    spec = recorded_booking(tmp_path, upstream)
    trace = spec.with_name("booking.trace.json")
    before = spec.read_text()

    printed = flowproof("suggest", "specs/booking.yaml", cwd=tmp_path)
    assert printed.code == 0, printed.output
    assert yaml.safe_load(printed.stdout) == {"steps": SUGGESTED}
    assert "flight.id from search_flights's result" in printed.stdout
    assert spec.read_text() == before  # printing never touches the spec

    written = flowproof("suggest", "specs/booking.yaml", "--write", cwd=tmp_path)
    assert written.code == 0, written.output
    after = spec.read_text()
    prompt_line = "  - prompt: Book me a flight to Nairobi tomorrow\n"
    head, _, tail = before.partition(prompt_line)
    assert after.startswith(head + prompt_line + "  - assert_tool_call: search_flights\n")
    assert after.endswith(tail)  # the comment and the key after the steps, as written
    assert yaml.safe_load(after)["steps"][1:] == SUGGESTED

    replayed = flowproof("run", "specs", cwd=tmp_path)
    assert replayed.code == 0, replayed.output

    recorded_trace = trace.read_text()
    upstream.received.clear()
    upstream.script = WRONG_FLIGHT_SCRIPT
    rerecorded = record(tmp_path, upstream)
    assert rerecorded.code == 1, rerecorded.output
    assert (
        "assert_tool_call create_booking where flight.id equals KQ311 — create_booking was called "
        'once, with flight.id = "KQ999"' in rerecorded.output
    ), rerecorded.output
    assert "assert reply contains B-1042" not in rerecorded.output  # only the threading failed
    assert trace.read_text() == recorded_trace  # a failed record writes no trace


def test_write_refuses_a_spec_that_already_has_assertion_steps(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    spec = write_spec(tmp_path, extra_steps="  - assert: reply contains booked\n")
    assert record(tmp_path, upstream).code == 0
    before = spec.read_text()
    result = flowproof("suggest", "specs/booking.yaml", "--write", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "specs/booking.yaml:12: the spec already has assertion steps" in result.stderr
    assert "step 2 (assert, line 12)" in result.stderr
    assert "`flowproof suggest specs/booking.yaml`" in result.stderr
    assert spec.read_text() == before


def test_a_spec_without_a_trace_is_exit_2_naming_the_record_command(tmp_path: Path) -> None:
    write_spec(tmp_path)
    result = flowproof("suggest", "specs/booking.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert result.stdout == ""
    assert "specs/booking.yaml: no trace to suggest steps from" in result.stderr
    assert "`flowproof record specs/booking.yaml`" in result.stderr


def test_a_bad_spec_is_exit_2_naming_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "broken.yaml"
    spec.parent.mkdir()
    spec.write_text(
        textwrap.dedent("""\
        name: broken
        app: agent
        agent: {command: "true"}
        stepz:
          - prompt: hi
        """)
    )
    result = flowproof("suggest", "specs/broken.yaml", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "specs/broken.yaml:4: unknown key 'stepz'" in result.stderr

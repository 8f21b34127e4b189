"""Bad input is a configuration error (exit 2) naming the file and line, never a traceback.

Each case runs the real CLI: values only known once `${VAR}` is resolved (a regex that no
longer compiles, an unset variable), and spec or suite files that are not UTF-8.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CliResult, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

BROKEN_REGEX = (
    "specs/booking.yaml:12: step 2 (assert_tool_call): matches: invalid regex '([': "
    "unterminated character set at position 1 (from ${PAT}); "
    "fix that variable's value in the environment, or the step"
)


def steps(*lines: str) -> str:
    return "".join(f"  - {line}\n" for line in lines)


def assert_config_error(result: CliResult, message: str) -> None:
    assert result.code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_a_regex_broken_by_a_variable_names_the_step_at_replay(recorded: Path) -> None:
    write_spec(
        recorded,
        extra_steps=steps("assert_tool_call: create_booking where flight.id matches ${PAT}"),
    )
    result = flowproof("run", "specs", cwd=recorded, env={"PAT": "(["})
    assert_config_error(result, f"ERROR specs/booking.yaml\n      {BROKEN_REGEX}\n")
    assert "1 not run (configuration errors)" in result.stderr


def test_a_regex_broken_by_a_variable_at_record_writes_no_trace(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(
        tmp_path,
        extra_steps=steps("assert_tool_call: create_booking where flight.id matches ${PAT}"),
    )
    assert_config_error(record(tmp_path, upstream, PAT="(["), BROKEN_REGEX)
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("assert_tool_call: create_booking where flight.id equals ${FLIGHT}", "assert_tool_call"),
        (
            "assert_no_tool_call: create_booking where flight.id equals ${FLIGHT}",
            "assert_no_tool_call",
        ),
        ("assert: reply contains ${FLIGHT}", "assert"),
    ],
)
def test_an_unset_variable_in_a_step_names_the_step(recorded: Path, line: str, kind: str) -> None:
    write_spec(recorded, extra_steps=steps("assert_tool_call: search_flights", line))
    result = flowproof("run", "specs", cwd=recorded)
    assert_config_error(
        result,
        f"specs/booking.yaml:13: step 3 ({kind}): ${{FLIGHT}} is used by the spec but is not "
        "set in the environment; set it before running flowproof, or take the reference out "
        "of the step",
    )


def test_a_spec_that_is_not_utf8(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    spec.write_bytes(spec.read_bytes().replace(b"to Nairobi", b"to Bogot\xe1"))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert_config_error(
        result,
        "specs/booking.yaml:11: not UTF-8 text (byte 0xe1 at column 38); save the file as UTF-8",
    )


def test_a_suite_file_that_is_not_utf8(tmp_path: Path) -> None:
    write_spec(tmp_path)
    (tmp_path / "specs" / "flowproof.yaml").write_bytes(b"env:\n  CITY: Bogot\xe1\n")
    result = flowproof("run", "specs", cwd=tmp_path)
    assert_config_error(
        result,
        "specs/flowproof.yaml:2: not UTF-8 text (byte 0xe1 at column 14); save the file as UTF-8",
    )

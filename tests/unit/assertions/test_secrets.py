"""assert_no_secret_leak: parsing, scanning, messages (redaction: tests/unit/test_redaction.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowproof.assertions.evaluate import StepRef
from flowproof.assertions.secrets import (
    Body,
    check_secrets,
    parse_secret_step,
)
from flowproof.core.errors import SecretStepError

REF = StepRef(4, "report.yaml", 15)
REQUEST = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "password pw-123!"},
    ],
}


def test_parses_names() -> None:
    assert parse_secret_step("DB_PASSWORD, STRIPE_KEY").names == ("DB_PASSWORD", "STRIPE_KEY")
    assert str(parse_secret_step("A B")) == "assert_no_secret_leak A B"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "db-password",
            "'db-password' is not an environment variable name; write "
            "`assert_no_secret_leak: NAME [NAME...]` with the variables that hold secrets",
        ),
        (
            "${DB_PASSWORD}",
            "'${DB_PASSWORD}' is not an environment variable name; write "
            "`assert_no_secret_leak: NAME [NAME...]` with the variables that hold secrets",
        ),
    ],
)
def test_refuses_what_is_not_a_name(text: str, message: str) -> None:
    with pytest.raises(SecretStepError) as caught:
        parse_secret_step(text)
    assert str(caught.value) == message


def test_a_leak_names_the_variable_and_place_never_the_value() -> None:
    verdict = check_secrets(
        REF,
        parse_secret_step("DB_PASSWORD"),
        [Body("turn 1 request", REQUEST)],
        {"DB_PASSWORD": "pw-123!"},
    )
    assert not verdict.passed and "pw-123!" not in verdict.message
    expected = (
        "step 4 (report.yaml:15): assert_no_secret_leak DB_PASSWORD — the value of "
        "DB_PASSWORD appeared in turn 1 request at messages[1].content"
    )
    assert verdict.message == expected
    # the reference page quotes this exact sentence
    assert expected in (Path(__file__).parents[3] / "docs" / "steps.md").read_text()


def test_no_leak_passes() -> None:
    verdict = check_secrets(
        REF,
        parse_secret_step("DB_PASSWORD"),
        [Body("turn 1 request", REQUEST)],
        {"DB_PASSWORD": "something-else"},
    )
    assert verdict.passed and verdict.message == ""


def test_many_places_are_counted() -> None:
    bodies = [Body(f"turn {n} request", REQUEST) for n in range(1, 6)]
    verdict = check_secrets(REF, parse_secret_step("P"), bodies, {"P": "pw-123"})
    assert verdict.message.endswith("and 2 more places")


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_a_value_json_escaped_inside_a_tool_result_is_a_leak(ensure_ascii: bool) -> None:
    """The usual way an agent sends a value: `json.dumps` of a dict as a tool result's content,
    so a quote, a backslash or a non-ASCII letter reaches the body escaped."""
    value = 'pa"ss\\wörd'
    result = json.dumps({"password": value}, ensure_ascii=ensure_ascii)
    request = {"messages": [{"role": "tool", "tool_call_id": "c1", "content": result}]}
    verdict = check_secrets(
        REF,
        parse_secret_step("DB_PASSWORD"),
        [Body("turn 2 request", request)],
        {"DB_PASSWORD": value},
    )
    assert verdict.message == (
        "step 4 (report.yaml:15): assert_no_secret_leak DB_PASSWORD — "
        "the value of DB_PASSWORD appeared in turn 2 request at messages[0].content"
    )

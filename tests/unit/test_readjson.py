"""The one JSON reader: every refusal names the path where the problem is, and it is a
ValueError, so a caller that already handled unparseable text handles these too."""

from __future__ import annotations

import json

import pytest

from flowproof.core.readjson import MAX_DEPTH, UnreadableJson, read_json


def refusal(text: str) -> str:
    with pytest.raises(UnreadableJson) as caught:
        read_json(text)
    return str(caught.value)


def nested(depth: int) -> str:
    return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_values_within_the_limits_read_as_json_does() -> None:
    text = '{"a": [1, -2.5e3, "x\\"y", {"b": null}], "k\\u00e9y": true, "n": ' + "9" * 4300 + "}"
    assert read_json(text) == json.loads(text)
    assert read_json(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    brackets = '{"a": "' + "[{" * 500 + '\\"]"}'  # brackets in a string are text, not nesting
    assert read_json(brackets) == json.loads(brackets)


def test_one_level_past_the_limit_is_refused_with_its_path() -> None:
    assert refusal(nested(MAX_DEPTH + 1)) == (
        "a[0][0][0][0][0][0][0][0][0][0][0]… (116 levels more): too deeply nested (more than "
        "128 levels of objects and lists)"
    )


def test_nesting_past_the_interpreters_stack_is_refused_not_a_crash() -> None:
    assert refusal('{"x": {"y": ' + "[" * 5000 + "]" * 5000 + "}}").startswith(
        "x.y[0][0][0][0][0][0][0][0][0][0]… (116 levels more): too deeply nested"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": [1, {"b": NaN}]}', "a[1].b: NaN is not a JSON number; write a number or null"),
        ("[Infinity]", "[0]: Infinity is not a JSON number; write a number or null"),
        ('{"a": -Infinity}', "a: -Infinity is not a JSON number; write a number or null"),
    ],
)
def test_nan_and_infinity_are_refused(text: str, message: str) -> None:
    assert refusal(text) == message


def test_a_duplicated_key_is_refused_naming_it_even_when_spelled_with_an_escape() -> None:
    assert refusal('{"lanes": {"model": [], "m\\u006fdel": []}}') == (
        "lanes.model: the key 'model' appears twice in one object (a reader keeps only one copy)"
    )
    assert read_json('[{"a": 1}, {"a": 2}]') == [{"a": 1}, {"a": 2}]  # one key per object


def test_an_integer_past_pythons_digit_limit_is_refused_with_its_path() -> None:
    assert refusal('{"usage": {"tokens": [1, ' + "7" * 5000 + "]}}") == (
        "usage.tokens[1]: an integer of 5000 digits (more than the 4300 Python reads)"
    )
    assert read_json("1." + "5" * 5000) == float("1." + "5" * 5000)  # a float has no such limit


def test_a_syntax_error_keeps_the_parsers_position() -> None:
    with pytest.raises(UnreadableJson) as caught:
        read_json('{"a": }')
    assert caught.value.syntax
    assert str(caught.value) == "not valid JSON (Expecting value: line 1 column 7 (char 6))"


def test_it_is_a_value_error() -> None:
    assert issubclass(UnreadableJson, ValueError)


@pytest.mark.parametrize(
    ("padding", "values"),
    [
        (1_000_000, 0),  # a long string and few values: the depth is walked on the value
        (0, 20_000),  # many values for the text's length: the brackets of the text are counted
    ],
)
def test_the_depth_limit_holds_however_the_document_is_made(padding: int, values: int) -> None:
    def document(depth: int) -> str:
        return json.dumps({"s": "x" * padding, "v": [0] * values})[:-1] + (
            ', "d": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
        )

    assert read_json(document(MAX_DEPTH)) == json.loads(document(MAX_DEPTH))
    assert refusal(document(MAX_DEPTH + 1)).startswith("d[0][0][0]")

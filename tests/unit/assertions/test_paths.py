from typing import Any

import pytest

from flowproof.assertions.paths import Lookup, format_path, lookup, parse_path

BOOKING: dict[str, Any] = {
    "flight": {"id": "KQ311", "seats": ["12A", "12B"]},
    "passengers": [{"name": "Casey", "meal": None}],
    "notes": None,
    "0": "a key that looks like an index",
}


def test_parse_path_keeps_every_segment_as_text() -> None:
    assert parse_path("passengers.0.name") == ("passengers", "0", "name")
    assert parse_path("flight") == ("flight",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty path"),
        ("a..b", "path 'a..b' has an empty segment"),
        (".a", "path '.a' has an empty segment"),
        ("a.", "path 'a.' has an empty segment"),
    ],
)
def test_parse_path_refuses_empty_segments(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_path(text)
    assert str(raised.value) == message


def test_format_path_is_dotted() -> None:
    assert format_path(("passengers", 0, "name")) == "passengers.0.name"
    assert format_path(()) == ""


def test_nested_keys() -> None:
    assert lookup(BOOKING, parse_path("flight.id")) == Lookup(True, "KQ311", 2)


def test_array_index() -> None:
    assert lookup(BOOKING, parse_path("passengers.0.name")) == Lookup(True, "Casey", 3)
    assert lookup(BOOKING, parse_path("flight.seats.1")) == Lookup(True, "12B", 3)


def test_int_segments_index_lists_and_name_dict_keys() -> None:
    assert lookup(BOOKING, ("passengers", 0, "name")).value == "Casey"
    assert lookup(BOOKING, (0,)).value == "a key that looks like an index"


def test_digits_are_a_key_when_they_meet_a_dict() -> None:
    assert lookup(BOOKING, parse_path("0")) == Lookup(True, "a key that looks like an index", 1)


def test_null_is_present() -> None:
    assert lookup(BOOKING, parse_path("notes")) == Lookup(True, None, 1)
    assert lookup(BOOKING, parse_path("passengers.0.meal")) == Lookup(True, None, 3)


@pytest.mark.parametrize(
    ("path", "depth"),
    [
        ("flight.number", 1),  # missing key
        ("passengers.1.name", 1),  # index past the end
        ("passengers.-1.name", 1),  # no negative indices
        ("passengers.first", 1),  # a word does not index a list
        ("flight.id.prefix", 2),  # a string has no children
        ("notes.text", 1),  # neither has null
        ("passengers.00x", 1),
    ],
)
def test_absent(path: str, depth: int) -> None:
    assert lookup(BOOKING, parse_path(path)) == Lookup(False, None, depth)


def test_negative_int_segment_is_absent() -> None:
    assert not lookup(["a"], (-1,)).present


def test_non_ascii_digits_are_not_an_index() -> None:
    assert not lookup(["a", "b", "c"], ("²",)).present


def test_empty_path_is_the_value_itself() -> None:
    assert lookup([1], ()) == Lookup(True, [1], 0)


def test_format_then_parse_reaches_the_same_place() -> None:
    path = ("passengers", 0, "name")
    assert lookup(BOOKING, parse_path(format_path(path))) == lookup(BOOKING, path)

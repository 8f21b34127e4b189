from typing import Any

import pytest

from flowproof.assertions.paths import (
    ABSENT,
    Lookup,
    differences,
    format_indexed,
    format_path,
    lookup,
    parse_path,
    walk,
)

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


def test_format_indexed_brackets_list_positions() -> None:
    assert format_indexed(("messages", 1, "content")) == "messages[1].content"
    assert format_indexed((0, "name")) == "[0].name"
    assert format_indexed(("0", "name")) == "0.name"
    assert format_indexed(()) == ""


def test_walk_visits_every_node_parents_first_in_key_order() -> None:
    value = {"b": [1, {"c": None}], "a": "x"}
    assert list(walk(value)) == [
        ((), value),
        (("b",), [1, {"c": None}]),
        (("b", 0), 1),
        (("b", 1), {"c": None}),
        (("b", 1, "c"), None),
        (("a",), "x"),
    ]


def test_every_walked_path_looks_up_its_node() -> None:
    for path, node in walk(BOOKING):
        assert lookup(BOOKING, path) == Lookup(True, node, len(path))


def test_equal_values_have_no_differences() -> None:
    assert list(differences(BOOKING, BOOKING, exact=True)) == []


def test_differences_are_in_first_value_key_order_then_new_keys() -> None:
    old = {"x": 1, "y": [1, 2], "z": {"k": "a"}}
    new = {"w": 0, "z": {"k": "b"}, "y": [1, 3, 4], "x": 1}
    assert list(differences(old, new)) == [
        (("y", 1), 2, 3),
        (("y", 2), ABSENT, 4),
        (("z", "k"), "a", "b"),
        (("w",), ABSENT, 0),
    ]


def test_absent_and_null_are_different_answers() -> None:
    assert list(differences({"a": None}, {})) == [(("a",), None, ABSENT)]
    assert list(differences({}, {"a": None})) == [(("a",), ABSENT, None)]
    assert repr(ABSENT) == "(absent)"


def test_uneven_lists_may_be_one_value() -> None:
    assert list(differences({"l": [1]}, {"l": [1, 2]}, whole_uneven_lists=True)) == [
        (("l",), [1], [1, 2])
    ]
    assert list(differences([1, 2], [1, 3], whole_uneven_lists=True)) == [((1,), 2, 3)]


def test_a_container_of_another_kind_is_one_value() -> None:
    assert list(differences({"a": {"b": 1}}, {"a": [1]})) == [(("a",), {"b": 1}, [1])]


@pytest.mark.parametrize(("a", "b"), [(1, 1.0), (1, True), (0, False)])
def test_exact_comparison_tells_numbers_and_booleans_apart(a: object, b: object) -> None:
    assert list(differences([a], [b])) == []
    assert list(differences([a], [b], exact=True)) == [((0,), a, b)]


def test_exact_comparison_reports_a_key_order_after_the_children() -> None:
    old, new = {"a": 1, "b": {"c": 1, "d": 2}}, {"b": {"d": 2, "c": 9}, "a": 1}
    assert list(differences(old, new)) == [(("b", "c"), 1, 9)]
    assert list(differences(old, new, exact=True)) == [
        (("b", "c"), 1, 9),
        (("b",), old["b"], new["b"]),
        ((), old, new),
    ]


def test_different_keys_are_not_a_key_order() -> None:
    assert list(differences({"a": 1}, {"b": 1}, exact=True)) == [
        (("a",), 1, ABSENT),
        (("b",), ABSENT, 1),
    ]

from typing import Any

import pytest

from flowproof.assertions.matchers import (
    Contains,
    Equals,
    Exists,
    IsAbsent,
    Matcher,
    Matches,
    get_matcher,
    json_equal,
    matcher_names_help,
    matcher_spellings,
    registry,
)
from flowproof.assertions.paths import Lookup
from flowproof.core.errors import MatcherError


def present(value: Any) -> Lookup:
    return Lookup(present=True, value=value, depth=1)


ABSENT = Lookup(present=False, depth=0)


def test_registry_is_in_definition_order() -> None:
    assert [m.name for m in registry()] == ["equals", "contains", "matches", "exists", "is absent"]


def test_names_help() -> None:
    assert matcher_names_help() == "equals (is), contains, matches, exists, is absent (is missing)"


def test_aliases_resolve_to_the_same_matcher() -> None:
    assert get_matcher("is") is Equals
    assert get_matcher("is missing") is IsAbsent


def test_unknown_matcher_lists_them_all() -> None:
    with pytest.raises(MatcherError) as raised:
        get_matcher("equls")
    assert str(raised.value) == (
        "unknown matcher 'equls'; expected one of: "
        "equals (is), contains, matches, exists, is absent (is missing)"
    )


def test_multiword_spellings_are_tried_first() -> None:
    spellings = matcher_spellings()
    assert spellings.index("is absent") < spellings.index("is")
    assert spellings.index("is missing") < spellings.index("is")


@pytest.mark.parametrize(
    ("actual", "text", "expected"),
    [
        ("KQ311", "KQ311", True),
        ("KQ311", "kq311", False),
        ("KQ311", "KQ31", False),
        ("3", "3", True),  # a string compares as text
        (3, "3", True),
        (3.0, "3", True),
        (3, "3.5", False),
        (3, '"3"', False),  # the JSON string "3" is not the number 3
        (True, "true", True),
        (True, "1", False),  # JSON true is not 1, whatever Python says
        (1, "true", False),
        (None, "null", True),
        (None, "None", False),
        ({"a": 1, "b": [2]}, '{"b": [2], "a": 1}', True),
        ({"a": 1}, '{"a": 2}', False),
        ([1, "x"], '[1, "x"]', True),
        ({"a": 1}, "{a: 1}", False),  # not JSON: compared with the JSON text
    ],
)
def test_equals(actual: Any, text: str, expected: bool) -> None:
    assert Equals.check(present(actual), text) is expected


def test_equals_never_matches_absent() -> None:
    assert Equals.check(ABSENT, "null") is False


@pytest.mark.parametrize(
    ("actual", "text", "expected"),
    [
        ("Casey Jones", "Casey", True),
        ("Casey Jones", "casey", False),
        (["NBO", "MBA"], "MBA", True),
        (["NBO", "MBA"], "MB", False),  # an element must equal the text, not contain it
        ([1, 2, 3], "2", True),  # the equals rule applies per element
        ([True], "1", False),
        ({"NBO": 1}, "NBO", True),
        ({"NBO": 1}, "1", False),
        (5000, "50", True),  # a number is searched as its JSON text
        (None, "nul", True),
    ],
)
def test_contains(actual: Any, text: str, expected: bool) -> None:
    assert Contains.check(present(actual), text) is expected


def test_contains_never_matches_absent() -> None:
    assert Contains.check(ABSENT, "") is False


@pytest.mark.parametrize(
    ("actual", "pattern", "expected"),
    [
        ("12C", "[0-9]+[A-F]", True),
        ("seat 12C", "[0-9]+[A-F]", True),  # re.search: anywhere
        ("seat 12C", "^[0-9]+[A-F]$", False),
        ("12c", "^[0-9]+[A-F]$", False),
        (42, "^4", True),  # non-strings as their JSON text
        ({"id": "KQ311"}, '"id": "KQ', True),
    ],
)
def test_matches(actual: Any, pattern: str, expected: bool) -> None:
    assert Matches.check(present(actual), pattern) is expected


def test_matches_never_matches_absent() -> None:
    assert Matches.check(ABSENT, ".*") is False


def test_matches_refuses_a_broken_regex_when_validated() -> None:
    with pytest.raises(MatcherError) as raised:
        Matches.validate("[0-9")
    assert str(raised.value) == (
        "matches: invalid regex '[0-9': unterminated character set at position 0"
    )


def test_exists() -> None:
    assert Exists.check(present("x"), None) is True
    assert Exists.check(present(None), None) is True  # null is present
    assert Exists.check(ABSENT, None) is False


def test_is_absent() -> None:
    assert IsAbsent.check(ABSENT, None) is True
    assert IsAbsent.check(present(None), None) is False  # null is NOT absent
    assert IsAbsent.check(present(""), None) is False


@pytest.mark.parametrize(
    ("matcher", "value", "spelled", "message"),
    [
        (Exists, "3", "", "exists takes no value, got '3'"),
        (IsAbsent, "yes", "is missing", "is missing takes no value, got 'yes'"),
        (Equals, None, "", "equals needs a value"),
        (Equals, None, "is", "is needs a value"),
        (Matches, None, "", "matches needs a value"),
    ],
)
def test_arity_is_refused_at_build(
    matcher: type[Matcher], value: str | None, spelled: str, message: str
) -> None:
    with pytest.raises(MatcherError) as raised:
        matcher.validate(value, spelled)
    assert str(raised.value) == message


def test_values_that_can_work_validate() -> None:
    Equals.validate("x")
    Exists.validate(None)
    Matches.validate("^[A-Z]{2}[0-9]+$")


def test_a_duplicate_name_raises_naming_both_classes() -> None:
    with pytest.raises(TypeError) as raised:

        class Twin(Matcher):
            name = "equals"
            help = "a second equals"
            example = "assert_tool_call: t where a equals 1"

    assert str(raised.value) == "matcher 'equals' is declared by both Equals and Twin"


def test_a_duplicate_alias_raises_and_registers_nothing() -> None:
    with pytest.raises(TypeError) as raised:

        class Missing(Matcher):
            name = "lacks"
            aliases = ("is missing",)
            takes_value = False
            help = "a clash"
            example = "assert_tool_call: t where a lacks"

    assert str(raised.value) == "matcher 'is missing' is declared by both IsAbsent and Missing"
    with pytest.raises(MatcherError):
        get_matcher("lacks")
    assert len(registry()) == 5


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (1, 1.0, True),
        (False, 0, False),
        ([1, [2]], [1, [2.0]], True),
        ([1], [1, 2], False),
        ({"a": None}, {}, False),
        ("1", 1, False),
        (None, None, True),
    ],
)
def test_json_equal(left: Any, right: Any, expected: bool) -> None:
    assert json_equal(left, right) is expected

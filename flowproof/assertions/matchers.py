"""The matchers a `where` clause can use, kept in a registry that subclassing fills.

A matcher is a class, never instantiated: it declares its spellings and help as class
attributes, and `__init_subclass__` registers it. Two classes claiming the same spelling is a
TypeError at class definition, naming both, so a clash cannot wait for some spec to trip on it.
The registry's order is definition order, which is the order the docs and help list them in.

Each matcher is handed a `Lookup` (the actual value at the clause's path, or its absence) and
the clause's value text after `${VAR}` substitution, and answers a bool. Everything a spec can
get wrong about a matcher (a value where none is taken, a broken regex) is refused by
`validate`, which the grammar calls when the assertion is built, not when it is evaluated.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from flowproof.assertions.paths import Lookup
from flowproof.core.errors import MatcherError
from flowproof.core.registry import refuse_clash

_REGISTRY: dict[str, type[Matcher]] = {}
_ORDER: list[type[Matcher]] = []


def _register(cls: type[Matcher]) -> None:
    # Check every spelling before adding any, so a refused class leaves no half-registration.
    for spelling in cls.spellings():
        refuse_clash("matcher", spelling, _REGISTRY.get(spelling), cls)
    for spelling in cls.spellings():
        _REGISTRY[spelling] = cls
    _ORDER.append(cls)


class Matcher:
    """Base class; a subclass that declares `name` is a matcher and registers itself."""

    name: ClassVar[str]
    """The canonical spelling, as the docs list it: `equals`, `is absent`."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other spellings that mean exactly the same."""
    takes_value: ClassVar[bool] = True
    """Whether the clause carries a value after the matcher (`exists` does not)."""
    help: ClassVar[str]
    """One line for the help listing."""
    example: ClassVar[str]
    """A whole step line using the matcher, as it would appear in a spec."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:  # a subclass without its own name is a shared helper
            _register(cls)

    @classmethod
    def spellings(cls) -> tuple[str, ...]:
        """The name, then the aliases."""
        return (cls.name, *cls.aliases)

    @classmethod
    def validate(cls, value: str | None, spelled: str = "") -> None:
        """Refuse a value that can never work; `spelled` is the word the spec used."""
        cls.check_arity(value, spelled)
        if value is not None:
            cls.validate_value(value)

    @classmethod
    def check_arity(cls, value: str | None, spelled: str = "") -> None:
        """Refuse a value for a value-less matcher, and a missing one for the others."""
        word = spelled or cls.name
        if cls.takes_value and value is None:
            raise MatcherError(f"{word} needs a value")
        if not cls.takes_value and value is not None:
            raise MatcherError(f"{word} takes no value, got '{value}'")

    @classmethod
    def validate_value(cls, value: str) -> None:
        """Refuse a value this matcher cannot use; by default every text is usable."""

    @classmethod
    def check(cls, actual: Lookup, value: str | None) -> bool:
        """Whether the actual value (or its absence) satisfies the clause."""
        raise NotImplementedError


class _ValueMatcher(Matcher):
    """A matcher that compares a present value with the clause's text; absent never matches."""

    @classmethod
    def check(cls, actual: Lookup, value: str | None) -> bool:
        return actual.present and value is not None and cls.test(actual.value, value)

    @classmethod
    def test(cls, actual: Any, text: str) -> bool:
        raise NotImplementedError


class Equals(_ValueMatcher):
    """A string compares as text, exactly (case included): `where city equals Nairobi`.

    Any other value (number, boolean, null, list, object) compares as JSON: the clause's text is
    parsed as JSON and compared by value, so `where count equals 3` matches `3` and `3.0`, and
    `where ok equals true` matches `true` but not `1`. Object key order does not matter. Text
    that is not JSON is compared with the value's JSON text instead.
    """

    name = "equals"
    aliases = ("is",)
    help = "the value is exactly the text (strings as text; numbers, booleans, null as JSON)"
    example = "assert_tool_call: create_booking where flight.id equals KQ311"

    @classmethod
    def test(cls, actual: Any, text: str) -> bool:
        return equals_text(actual, text)


class Contains(_ValueMatcher):
    """On a string: the text is a substring (case-sensitive).

    On a list: some element equals the text, by the same rule as `equals`. On an object: the
    text is one of its keys. On a number, boolean or null: a substring of its JSON text.
    """

    name = "contains"
    help = "a substring of a string, an element of a list, or a key of an object"
    example = "assert_tool_call: create_booking where passenger.name contains Casey"

    @classmethod
    def test(cls, actual: Any, text: str) -> bool:
        if isinstance(actual, str):
            return text in actual
        if isinstance(actual, list):
            return any(equals_text(element, text) for element in actual)
        if isinstance(actual, dict):
            return text in actual
        return text in json_text(actual)


class Matches(_ValueMatcher):
    """A Python regular expression found anywhere in the value (`re.search`; anchor it with
    `^...$` to match the whole value). A value that is not a string is searched as its JSON
    text. The pattern is compiled when the spec is loaded, so a broken one fails the spec."""

    name = "matches"
    help = "a regular expression found anywhere in the value (re.search)"
    example = "assert_tool_call: book_seat where seat matches ^[0-9]+[A-F]$"

    @classmethod
    def validate_value(cls, value: str) -> None:
        compile_regex(value)

    @classmethod
    def test(cls, actual: Any, text: str) -> bool:
        subject = actual if isinstance(actual, str) else json_text(actual)
        return compile_regex(text).search(subject) is not None


class Exists(Matcher):
    """The path is present in the arguments. A key holding JSON null is present."""

    name = "exists"
    takes_value = False
    help = "the path is present (a key holding null counts as present)"
    example = "assert_tool_call: create_booking where idempotency_key exists"

    @classmethod
    def check(cls, actual: Lookup, value: str | None) -> bool:
        return actual.present


class IsAbsent(Matcher):
    """The path is not present: the key is missing, the index is past the end of the list,
    or the path runs into a string or number. A key holding JSON null is NOT absent."""

    name = "is absent"
    aliases = ("is missing",)
    takes_value = False
    help = "the path is not present (a key holding null is present, so not absent)"
    example = "assert_tool_call: search_flights where return_date is absent"

    @classmethod
    def check(cls, actual: Lookup, value: str | None) -> bool:
        return not actual.present


def registry() -> list[type[Matcher]]:
    """Every matcher, in definition order."""
    return list(_ORDER)


def get_matcher(spelling: str) -> type[Matcher]:
    """The matcher a spelling names; an unknown one is a MatcherError listing them all."""
    try:
        return _REGISTRY[spelling]
    except KeyError:
        raise MatcherError(
            f"unknown matcher '{spelling}'; expected one of: {matcher_names_help()}"
        ) from None


def matcher_spellings() -> list[str]:
    """Every spelling, those with more words first, so `is absent` is tried before `is`."""
    return sorted(_REGISTRY, key=lambda spelling: (-len(spelling.split()), -len(spelling)))


def matcher_names_help() -> str:
    """`equals (is), contains, matches, exists, is absent (is missing)`."""
    return ", ".join(f"{m.name} ({', '.join(m.aliases)})" if m.aliases else m.name for m in _ORDER)


def json_text(value: Any) -> str:
    """One-line JSON, key order kept: how values appear in matching and in messages."""
    return json.dumps(value, ensure_ascii=False)


def equals_text(actual: Any, text: str) -> bool:
    """The `equals` rule: strings as text, anything else as JSON (see `Equals`)."""
    if isinstance(actual, str):
        return actual == text
    try:
        expected = json.loads(text)
    except ValueError:
        return json_text(actual) == text
    return json_equal(actual, expected)


def json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values: `true` is not `1` (Python says it is), `3` is `3.0`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and bool(left == right)


def compile_regex(pattern: str) -> re.Pattern[str]:
    """Compile a `matches` pattern; a broken one is a MatcherError quoting the regex."""
    try:
        return re.compile(pattern)
    except re.error as error:
        raise MatcherError(f"matches: invalid regex '{pattern}': {error}") from None

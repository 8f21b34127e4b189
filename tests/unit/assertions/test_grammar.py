from pathlib import Path

import pytest

from flowproof.assertions.grammar import (
    Assertion,
    Clause,
    ReplyAssertion,
    ToolCallAssertion,
)
from flowproof.assertions.kinds import parse_step
from flowproof.assertions.matchers import Contains, Equals, Exists, IsAbsent, Matches
from flowproof.core.errors import GrammarError
from tests.golden import assert_same_text

CASES = Path(__file__).parents[2] / "data" / "cases" / "grammar"
MATCHERS = "equals (is), contains, matches, exists, is absent (is missing)"


def test_a_bare_tool() -> None:
    assertion = parse_step("assert_tool_call", "  search_flights ")
    assert assertion == ToolCallAssertion(tool="search_flights")
    assert str(assertion) == "assert_tool_call search_flights"


def test_assert_no_tool_call_forbids() -> None:
    assertion = parse_step("assert_no_tool_call", "transfer_funds")
    assert assertion == ToolCallAssertion(tool="transfer_funds", forbid=True)
    assert str(assertion) == "assert_no_tool_call transfer_funds"


def test_one_clause() -> None:
    assertion = parse_step("assert_tool_call", "create_booking where flight.id equals KQ311")
    assert assertion == ToolCallAssertion(
        tool="create_booking",
        clauses=(Clause(("flight", "id"), Equals, "KQ311", "equals"),),
    )
    assert str(assertion) == "assert_tool_call create_booking where flight.id equals KQ311"


def test_and_joins_clauses_and_each_keeps_its_spelling() -> None:
    text = (
        "create_booking where flight.id is KQ311 and passengers.0.name contains Casey Jones"
        " and seat matches ^[0-9]+[A-F]$ and key exists and coupon is missing"
    )
    assertion = parse_step("assert_no_tool_call", text)
    assert assertion == ToolCallAssertion(
        tool="create_booking",
        clauses=(
            Clause(("flight", "id"), Equals, "KQ311", "is"),
            Clause(("passengers", "0", "name"), Contains, "Casey Jones", "contains"),
            Clause(("seat",), Matches, "^[0-9]+[A-F]$", "matches"),
            Clause(("key",), Exists, None, "exists"),
            Clause(("coupon",), IsAbsent, None, "is missing"),
        ),
        forbid=True,
    )
    assert str(assertion) == "assert_no_tool_call " + text


def test_is_absent_wins_over_is() -> None:
    assertion = parse_step("assert_tool_call", "t where return_date is absent")
    assert isinstance(assertion, ToolCallAssertion)
    assert assertion.clauses == (Clause(("return_date",), IsAbsent, None, "is absent"),)


def test_a_value_keeps_its_inner_spacing_and_may_contain_where() -> None:
    assertion = parse_step("assert_tool_call", "t  where   note equals  go  where needed ")
    assert isinstance(assertion, ToolCallAssertion)
    assert assertion.clauses == (Clause(("note",), Equals, "go  where needed", "equals"),)


def test_a_word_merely_containing_and_does_not_split() -> None:
    assertion = parse_step("assert_tool_call", "t where city equals Sandton andante")
    assert isinstance(assertion, ToolCallAssertion)
    assert [c.value for c in assertion.clauses] == ["Sandton andante"]


def test_a_var_reference_is_kept_unresolved() -> None:
    assertion = parse_step("assert_tool_call", "t where account equals ${ACCOUNT_ID}")
    assert isinstance(assertion, ToolCallAssertion)
    assert assertion.clauses[0].value == "${ACCOUNT_ID}"
    assert str(assertion) == "assert_tool_call t where account equals ${ACCOUNT_ID}"


def test_an_unmatched_clause_str_defaults_to_the_matcher_name() -> None:
    assert str(Clause(("a",), Equals, "1")) == "a equals 1"


def test_reply_contains() -> None:
    assertion = parse_step("assert", "reply contains booked and paid")
    assert assertion == ReplyAssertion(text="booked and paid", spelled="contains")
    assert str(assertion) == "assert reply contains booked and paid"


def test_reply_is_is_kept_as_written() -> None:
    assertion = parse_step("assert", "reply is booked")
    assert assertion == ReplyAssertion(text="booked", spelled="is")
    assert str(assertion) == "assert reply is booked"


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        (
            "assert_tool_call",
            "create_booking where flight.id equls KQ311",
            "could not read clause 'flight.id equls KQ311': expected '<path> <matcher> [<value>]'"
            f" with a matcher from: {MATCHERS}",
        ),
        (
            "assert_tool_call",
            "create_booking where flight.id",
            "could not read clause 'flight.id': expected '<path> <matcher> [<value>]'"
            f" with a matcher from: {MATCHERS}",
        ),
        (
            "assert",
            "replyy contains x",
            "could not read 'replyy contains x': expected 'reply contains <text>'"
            " (or 'reply is <text>')",
        ),
        (
            "assert",
            "reply contains ",
            "could not read 'reply contains': expected 'reply contains <text>'"
            " (or 'reply is <text>')",
        ),
        (
            "assert_tool_call",
            "book_seat where seat matches [0-9",
            "matches: invalid regex '[0-9': unterminated character set at position 0",
        ),
        ("assert_tool_call", "   ", "assert_tool_call needs a tool name"),
        ("assert_no_tool_call", "", "assert_no_tool_call needs a tool name"),
        (
            "assert_tool_call",
            "where flight.id equals KQ311",
            "could not read 'where flight.id equals KQ311':"
            " the tool name is missing before 'where'",
        ),
        (
            "assert_tool_call",
            "create booking",
            "could not read 'create booking': expected '<tool>' or"
            " '<tool> where <path> <matcher> [<value>] [and ...]'",
        ),
        (
            "assert_tool_call",
            "create_booking where",
            "could not read 'create_booking where': expected at least one clause after 'where'",
        ),
        (
            "assert_tool_call",
            "create_booking where a exists and",
            "could not read 'create_booking where a exists and':"
            " empty clause before or after 'and'",
        ),
        (
            "assert_tool_call",
            "create_booking where and a exists",
            "could not read 'create_booking where and a exists':"
            " empty clause before or after 'and'",
        ),
        (
            "assert_tool_call",
            "t where a exists and and b exists",
            "could not read 't where a exists and and b exists':"
            " empty clause before or after 'and'",
        ),
        (
            "assert_tool_call",
            "t where ok exists 3",
            "could not read clause 'ok exists 3': exists takes no value, got '3'",
        ),
        (
            "assert_tool_call",
            "t where ok is absent now",
            "could not read clause 'ok is absent now': is absent takes no value, got 'now'",
        ),
        ("assert_tool_call", "t where x is", "could not read clause 'x is': is needs a value"),
        (
            "assert_tool_call",
            "t where a..b equals 1",
            "could not read clause 'a..b equals 1': path 'a..b' has an empty segment",
        ),
    ],
)
def test_errors(kind: str, text: str, message: str) -> None:
    with pytest.raises(GrammarError) as raised:
        parse_step(kind, text)
    assert str(raised.value) == message


def test_grammar_error_is_a_value_error() -> None:
    assert issubclass(GrammarError, ValueError)


def dump(assertion: Assertion) -> str:
    """The compiled form, as the golden files spell it."""
    if isinstance(assertion, ReplyAssertion):
        lines = [f"ReplyAssertion text={assertion.text!r} spelled={assertion.spelled!r}"]
    else:
        lines = [f"ToolCallAssertion tool={assertion.tool!r} forbid={assertion.forbid}"]
        lines += [
            f"  Clause path={c.path!r} matcher={c.matcher.name!r}"
            f" spelled={c.spelled!r} value={c.value!r}"
            for c in assertion.clauses
        ]
    return "\n".join([*lines, f"str: {assertion}"])


def compile_case(line: str) -> str:
    kind, _, text = line.partition(": ")
    try:
        return dump(parse_step(kind, text))
    except GrammarError as error:
        return f"GrammarError: {error}"


@pytest.mark.parametrize("case", sorted(CASES.glob("*.txt")), ids=lambda path: path.stem)
def test_golden(case: Path) -> None:
    source, _, expected = case.read_text().partition("\n# output\n")
    actual = compile_case(source.strip()) + "\n"
    assert_same_text(
        expected, actual, source=case.name, problem=f"compiled form differs from {case}"
    )


def test_there_are_golden_cases() -> None:
    assert len(list(CASES.glob("*.txt"))) >= 5

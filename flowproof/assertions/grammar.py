"""Assertion steps, from the prose a spec holds to the compiled values `evaluate` checks.

    assert_tool_call:    <tool> [where <path> <matcher> [<value>] (and <path> <matcher> [<value>])*]
    assert_no_tool_call: the same
    assert:              reply contains <text>   |   reply is <text>

A value runs unquoted to the end of its clause, and clauses are split on the word `and`, so a
value cannot contain the word "and" (a reply text can: it has no clauses). A `${VAR}` in a value
is kept as written here and resolved by `evaluate`, so no resolved value is ever stored. Every
mistake a spec can make is a GrammarError raised now, at load, so a typo fails the spec before
any agent runs; that includes a `matches` pattern that does not compile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flowproof.assertions.matchers import (
    Matcher,
    get_matcher,
    matcher_names_help,
    matcher_spellings,
)
from flowproof.assertions.paths import Path, format_path, parse_path
from flowproof.core.errors import GrammarError, MatcherError

_TOOL_SHAPE = "'<tool>' or '<tool> where <path> <matcher> [<value>] [and ...]'"
_CLAUSE_SHAPE = "'<path> <matcher> [<value>]'"
_REPLY_SHAPE = "'reply contains <text>' (or 'reply is <text>')"


@dataclass(frozen=True, slots=True)
class Clause:
    """`flight.id equals KQ311`: one condition on a tool call's arguments."""

    path: Path
    """Where in the arguments to look."""
    matcher: type[Matcher]
    """How to compare what is found there."""
    value: str | None
    """The text after the matcher, `${VAR}` unresolved; None for a value-less matcher."""
    spelled: str = ""
    """The matcher word as the spec wrote it (`is` for equals); empty means the name."""

    def __str__(self) -> str:
        words = [format_path(self.path), self.spelled or self.matcher.name]
        if self.value is not None:
            words.append(self.value)
        return " ".join(words)


@dataclass(frozen=True, slots=True)
class ToolCallAssertion:
    """`assert_tool_call` (or, with `forbid`, `assert_no_tool_call`) on one tool."""

    tool: str
    """The tool name, exactly as the model must spell it."""
    clauses: tuple[Clause, ...] = ()
    """Conditions every one of which the call's arguments must meet; none means any call."""
    forbid: bool = False
    """True for assert_no_tool_call: no call may match, anywhere in the trajectory."""

    @property
    def kind(self) -> str:
        """The step key this assertion came from."""
        return "assert_no_tool_call" if self.forbid else "assert_tool_call"

    def __str__(self) -> str:
        line = f"{self.kind} {self.tool}"
        if self.clauses:
            line += " where " + " and ".join(str(clause) for clause in self.clauses)
        return line


@dataclass(frozen=True, slots=True)
class ReplyAssertion:
    """`assert: reply contains <text>`: a substring of the final assistant message."""

    text: str
    """The text to find, `${VAR}` unresolved; the match is case-sensitive."""
    spelled: str = "contains"
    """`contains` or `is`, as the spec wrote it; both mean substring."""

    @property
    def kind(self) -> str:
        """The step key this assertion came from."""
        return "assert"

    def __str__(self) -> str:
        return f"assert reply {self.spelled} {self.text}"


Assertion = ToolCallAssertion | ReplyAssertion
"""Anything this grammar compiles."""


def parse_reply(text: str) -> ReplyAssertion:
    """Compile the text of an `assert:` step."""
    match = re.fullmatch(r"reply\s+(contains|is)\s+(\S.*)", text.strip(), re.DOTALL)
    if match is None:
        raise GrammarError(f"could not read '{text.strip()}': expected {_REPLY_SHAPE}")
    return ReplyAssertion(text=match.group(2), spelled=match.group(1))


def parse_tool_call(text: str, *, forbid: bool = False) -> ToolCallAssertion:
    """Compile the text of an `assert_tool_call` step (`assert_no_tool_call` with `forbid`)."""
    line = text.strip()
    if not line:
        kind = "assert_no_tool_call" if forbid else "assert_tool_call"
        raise GrammarError(f"{kind} needs a tool name")
    tool, _, rest = _split_first_word(line)
    if tool == "where":
        raise GrammarError(f"could not read '{line}': the tool name is missing before 'where'")
    if not rest:
        return ToolCallAssertion(tool=tool, forbid=forbid)
    keyword, _, body = _split_first_word(rest)
    if keyword != "where":
        raise GrammarError(f"could not read '{line}': expected {_TOOL_SHAPE}")
    if not body:
        raise GrammarError(f"could not read '{line}': expected at least one clause after 'where'")
    # Split on `and` standing as a word. A space is prepended so a leading `and` splits too,
    # leaving an empty first clause that is reported rather than read as a path named "and".
    parts = [part.strip() for part in re.split(r"\s+and(?=\s|$)", " " + body)]
    if "" in parts:
        raise GrammarError(f"could not read '{line}': empty clause before or after 'and'")
    return ToolCallAssertion(tool=tool, clauses=tuple(map(_parse_clause, parts)), forbid=forbid)


def _parse_clause(text: str) -> Clause:
    path_text, _, rest = _split_first_word(text)
    found = _find_matcher(rest)
    if found is None:
        raise GrammarError(
            f"could not read clause '{text}': expected {_CLAUSE_SHAPE} "
            f"with a matcher from: {matcher_names_help()}"
        )
    spelled, value = found
    matcher = get_matcher(spelled)
    try:
        path = parse_path(path_text)
    except ValueError as error:
        raise GrammarError(f"could not read clause '{text}': {error}") from None
    try:
        matcher.validate(value, spelled)
    except MatcherError as error:
        # A value where none is taken (or none where one is) is a clause that does not read;
        # any other refusal quotes the offending value itself (`matches: invalid regex '...'`).
        misread = matcher.takes_value != (value is not None)
        raise GrammarError(
            f"could not read clause '{text}': {error}" if misread else str(error)
        ) from None
    return Clause(path=path, matcher=matcher, value=value, spelled=spelled)


def _find_matcher(rest: str) -> tuple[str, str | None] | None:
    """The matcher spelling `rest` starts with, and the value after it (None when there is none).

    Spellings with more words are tried first, so `is absent` wins over `is` + value "absent".
    """
    for spelling in matcher_spellings():
        words = r"\s+".join(re.escape(word) for word in spelling.split())
        match = re.fullmatch(words + r"(?:\s+(.*))?", rest, re.DOTALL)
        if match is not None:
            value = (match.group(1) or "").strip()
            return spelling, value or None
    return None


def _split_first_word(text: str) -> tuple[str, str, str]:
    """`("create_booking", " ", "where ...")`, like str.partition on the first whitespace run."""
    match = re.match(r"(\S+)(\s*)(.*)", text, re.DOTALL)
    if match is None:
        return "", "", ""
    return match.group(1), match.group(2), match.group(3)

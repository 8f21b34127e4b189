"""Assertion steps a recorded flow satisfies, read off what the recording shows.

`flowproof suggest SPEC` hands this module what one recording holds (`Recording`: the task,
the trajectory, every tool result the model was told, the tools it was offered) and gets back
steps in the spec grammar, each with the reason it was chosen. The rules keep what a re-record
should reproduce and leave out what the model merely phrased:

- `assert_tool_call`, one per call, in order. A `where` clause is added only for an argument
  whose value the model did not invent: one that equals a value of a tool result the model had
  been told before it made the call (an id threaded from `search_flights` into
  `create_booking`), or that the task's text holds as a word. Free text the model wrote, a date
  it worked out, a code it translated a city into: none is stable across models or days.
- `assert_no_tool_call` for a tool the requests offered and the model never asked for, when its
  name sounds destructive (`delete_*`, `transfer_*`, ...) or when few tools were offered
  (`FEW_TOOLS` or fewer: then leaving one alone is a choice worth pinning, not noise).
- `assert: reply contains` on one value the final reply repeats from a tool result (the
  booking reference, preferring values with digits and the latest result), else on a word of
  the task (a proper name first). Filler ("Your", "booked") says nothing about the outcome.

Every suggested step is compiled with the grammar and judged against the recording's own
trajectory before it is returned, so what is printed is known to pass on a replay of the same
trace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from flowproof.assertions.evaluate import StepRef, evaluate
from flowproof.assertions.grammar import (
    Assertion,
    ToolCallAssertion,
    parse_reply,
    parse_tool_call,
)
from flowproof.assertions.matchers import json_text
from flowproof.assertions.paths import Path, format_path, lookup, walk
from flowproof.assertions.trajectory import ToolCall, Trajectory
from flowproof.core.errors import GrammarError

FEW_TOOLS = 4
"""At most this many tools offered: every one the model left alone gets `assert_no_tool_call`."""

DESTRUCTIVE_WORDS = frozenset(
    {
        "cancel",
        "charge",
        "delete",
        "destroy",
        "drop",
        "erase",
        "exec",
        "execute",
        "kill",
        "pay",
        "purge",
        "refund",
        "remove",
        "reset",
        "revoke",
        "rm",
        "shell",
        "terminate",
        "transfer",
        "truncate",
        "wipe",
        "withdraw",
    }
)
"""Words that make a tool name sound irreversible (`transfer_funds`, `deleteFile`)."""

MIN_VALUE_CHARS = 2
"""A value shorter than this (`1`, `a`) turns up everywhere; it proves no threading."""

MIN_REPLY_CHARS = 3
"""The shortest text a reply step is pinned on."""

MAX_VALUE_CHARS = 80
"""Longer values are prose, not ids; a reply step on them would break on a reworded sentence."""

_FILLER = frozenset(
    "about after again also been before book booked could does done flight flights from have "
    "here into just like make me need please some than that their them then there these they "
    "this today tomorrow want what when where which will with would your yours".split()
)
"""Task words too common to prove a reply is about this task (compared in lower case)."""


@dataclass(frozen=True, slots=True)
class SeenResult:
    """A tool result as the model was told it, in the request of one turn."""

    turn: int
    """Index of the turn whose request carried it (the trajectory's `ToolCall.turn` numbering)."""
    tool: str
    content: str


@dataclass(frozen=True, slots=True)
class Recording:
    """What one recorded flow shows, as `suggest` reads it."""

    task: str
    """The prompt steps joined as the agent got them."""
    trajectory: Trajectory
    results: tuple[SeenResult, ...]
    """Every tool result the model was told, in turn order."""
    offered: tuple[str, ...]
    """Every tool name the requests offered, first-offered first, each once."""


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One step to add: its key, its text, and why it was chosen (a YAML comment)."""

    kind: str
    text: str
    why: str = ""


@dataclass(frozen=True, slots=True)
class _Source:
    """Where a value could have come from: the task, or one tool result."""

    name: str
    text: str
    leaves: tuple[Any, ...]
    """The result's JSON values (strings and numbers, never keys); empty for plain text."""


def suggest(recording: Recording) -> list[Suggestion]:
    """The steps, in spec order: tool calls, then guards, then the reply."""
    steps = [_call_step(call, recording) for call in recording.trajectory.tool_calls]
    steps += _guard_steps(recording)
    steps += _reply_steps(recording)
    _check_all_pass(steps, recording.trajectory)
    return steps


def _call_step(call: ToolCall, recording: Recording) -> Suggestion:
    sources = _sources_before(call.turn, recording)
    clauses: list[str] = []
    reasons: list[str] = []
    for path, value in _leaves(call.arguments):
        text = _value_text(value)
        source = _first_source(value, text, sources) if text is not None else None
        clause = f"{format_path(path)} equals {text}"
        if source is None or not _clause_holds(call, clause, path, value):
            continue
        clauses.append(clause)
        reasons.append(f"{format_path(path)} from {source.name}")
    text = call.name + (" where " + " and ".join(clauses) if clauses else "")
    return Suggestion("assert_tool_call", text, "; ".join(reasons))


def _sources_before(turn: int, recording: Recording) -> list[_Source]:
    """Latest tool result first (an id is credited to the result that last showed it), then
    the task."""
    told = [r for r in recording.results if r.turn <= turn]
    sources = [_result_source(r) for r in reversed(told)]
    return [*sources, _Source("the prompt", recording.task, ())]


def _result_source(result: SeenResult) -> _Source:
    try:
        parsed = json.loads(result.content)
    except ValueError:
        return _Source(f"{result.tool}'s result", result.content, ())
    leaves = tuple(value for _, value in _leaves(parsed))
    return _Source(f"{result.tool}'s result", result.content, leaves)


def _leaves(value: Any) -> Iterator[tuple[Path, Any]]:
    """Every string and number in a JSON value with its path (booleans and nulls prove
    nothing: every tool has them)."""
    for path, item in walk(value):
        if isinstance(item, str) or (isinstance(item, int | float) and not isinstance(item, bool)):
            yield path, item


def _value_text(value: Any) -> str | None:
    """How a clause writes the value, or None when it cannot be written or proves nothing."""
    text = value if isinstance(value, str) else json_text(value)
    if not MIN_VALUE_CHARS <= len(text) <= MAX_VALUE_CHARS:
        return None
    if text != text.strip() or "\n" in text or "${" in text:
        return None  # the grammar strips a value, and would resolve ${...} as a variable
    return text


def _first_source(value: Any, text: str, sources: Sequence[_Source]) -> _Source | None:
    for source in sources:
        if source.leaves and any(value == leaf for leaf in source.leaves):
            return source
        if not source.leaves and _has_word(source.text, text):
            return source
    return None


def _has_word(haystack: str, needle: str) -> bool:
    """`needle` in `haystack` with no letter or digit touching either end."""
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


def _clause_holds(call: ToolCall, clause: str, path: Path, value: Any) -> bool:
    """The clause reads back as written and holds for the call: a key the grammar cannot
    address (`and`, one with a space or a dot) or a value it would split is left out."""
    try:
        compiled = parse_tool_call(f"{call.name} where {clause}")
    except GrammarError:
        return False
    only = compiled.clauses[0]
    found = lookup(call.arguments, only.path)
    return (
        only.path == tuple(map(str, path))
        and only.matcher.check(found, only.value)
        and (found.value == value)
    )


def _guard_steps(recording: Recording) -> list[Suggestion]:
    called = {call.name for call in recording.trajectory.tool_calls}
    few = len(recording.offered) <= FEW_TOOLS
    steps = []
    for tool in recording.offered:
        if tool in called or not _nameable(tool):
            continue
        if _sounds_destructive(tool):
            steps.append(Suggestion("assert_no_tool_call", tool, "offered, never asked for"))
        elif few:
            why = f"offered, never asked for (one of {len(recording.offered)} tools offered)"
            steps.append(Suggestion("assert_no_tool_call", tool, why))
    return steps


def _nameable(tool: str) -> bool:
    return bool(tool) and tool != "?" and not re.search(r"[\s/]", tool)


def _sounds_destructive(tool: str) -> bool:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool)
    return any(word in DESTRUCTIVE_WORDS for word in re.split(r"[^a-z0-9]+", spaced.lower()))


def _reply_steps(recording: Recording) -> list[Suggestion]:
    reply = recording.trajectory.reply
    if reply is None:
        return []
    found = _reply_value(reply, recording.results) or _reply_word(reply, recording.task)
    if found is None:
        return []
    text, why = found
    return [Suggestion("assert", f"reply contains {text}", why)]


def _reply_value(reply: str, results: Sequence[SeenResult]) -> tuple[str, str] | None:
    """The value of a tool result the reply repeats: with a digit first (an id, a price),
    then from the latest result, then the longest."""
    best: tuple[tuple[bool, int, int], str, str] | None = None
    for order, result in enumerate(results):
        source = _result_source(result)
        for leaf in source.leaves or _words(source.text):
            text = leaf if isinstance(leaf, str) else json_text(leaf)
            if not _usable_reply_text(text) or not _has_word(reply, text):
                continue
            rank = (any(c.isdigit() for c in text), order, len(text))
            if best is None or rank > best[0]:
                best = (rank, text, f"from {source.name}")
    return None if best is None else (best[1], best[2])


def _reply_word(reply: str, task: str) -> tuple[str, str] | None:
    """A word of the task the reply repeats: a capitalised one first, then the longest."""
    words = [w for w in _words(task) if w.isalpha() and w.lower() not in _FILLER]
    candidates = [w for w in words if len(w) >= 4 and _has_word(reply, w)]
    if not candidates:
        return None
    chosen = max(candidates, key=lambda w: (w[0].isupper(), len(w)))
    return chosen, "from the prompt"


def _words(text: str) -> list[str]:
    return re.findall(r"\w[\w-]*\w", text)


def _usable_reply_text(text: str) -> bool:
    return (
        MIN_REPLY_CHARS <= len(text) <= MAX_VALUE_CHARS
        and text == text.strip()
        and "\n" not in text
        and "${" not in text
    )


def _check_all_pass(steps: Sequence[Suggestion], trajectory: Trajectory) -> None:
    """Judge the suggestion against the trajectory it came from: a step that would fail there
    is a bug in the rules above, never something to print."""
    compiled: list[tuple[StepRef, Assertion]] = []
    for number, step in enumerate(steps, start=1):
        ref = StepRef(number=number, spec="(suggested)", line=0)
        compiled.append((ref, _compile(step)))
    failed = [v for v in evaluate(compiled, trajectory, strict=None, resolve=str) if not v.passed]
    if failed:
        raise AssertionError(f"a suggested step fails on its own recording: {failed[0]}")


def _compile(step: Suggestion) -> Assertion:
    if step.kind == "assert":
        return parse_reply(step.text)
    compiled: ToolCallAssertion = parse_tool_call(
        step.text, forbid=step.kind == "assert_no_tool_call"
    )
    return compiled


def render_items(steps: Sequence[Suggestion], indent: str = "  ") -> list[str]:
    """Each step as one line of a YAML block list, its reason as a trailing comment."""
    lines = []
    for step in steps:
        line = f"{indent}- {step.kind}: {_yaml_scalar(step.text)}"
        if step.why:
            line += f"  # {' '.join(step.why.split())}"
        lines.append(line)
    return lines


def render(steps: Sequence[Suggestion]) -> str:
    """The printed suggestion: a `steps:` list to paste under the prompt step."""
    if not steps:
        return "steps: []  # the recording holds no tool call and no reply to assert on\n"
    return "\n".join(["steps:", *render_items(steps)]) + "\n"


_PLAIN_UNSAFE = re.compile(r"^[-?:,\[\]{}#&*!|>'\"%@`\s]|: |\s#|:$|[\x00-\x1f\x7f]")


def _yaml_scalar(text: str) -> str:
    """The text as YAML reads it back: plain when that is safe, else double-quoted (a JSON
    string is a valid YAML double-quoted scalar)."""
    if _PLAIN_UNSAFE.search(text):
        return json.dumps(text, ensure_ascii=False)
    return text

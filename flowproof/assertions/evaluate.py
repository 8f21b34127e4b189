"""Judge a trajectory against compiled assertion steps: one Verdict per step, in spec order.

- `assert_tool_call` steps are an ORDERED SUBSEQUENCE of the tool calls. Each step takes the
  first call at or after the one the previous matching step took, with that name and every
  clause holding; calls in between are allowed. A step that fails takes nothing, so the next
  step searches from where the last match left off. Taking the earliest match is never worse
  than any other choice: it leaves the most calls for the steps after it.
- With `strict`, every call no assert_tool_call step took is reported in one extra Verdict.
- `assert_no_tool_call` looks at the whole trajectory, regardless of position.
- `assert: reply contains` looks for a substring of the final assistant message.

Arguments that are not JSON cannot be shown to satisfy a clause, nor to fail one. Both
directions are read conservatively: such a call never satisfies an assert_tool_call clause,
and it DOES count against an assert_no_tool_call that has clauses. A guard that passed because
it could not read the arguments would be a fallback that turns a test green.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from flowproof.assertions.grammar import Assertion, Clause, ReplyAssertion, ToolCallAssertion
from flowproof.assertions.matchers import json_text
from flowproof.assertions.paths import Lookup, format_path, lookup
from flowproof.assertions.trajectory import JudgedCall, Trajectory
from flowproof.core.errors import ConfigError, MatcherError, SpecError
from flowproof.guards.spellings import clip

Resolver = Callable[[str], str]
"""Substitutes the `${...}` references in a value's text (supplied by the engine)."""

_LIMIT = 200
"""Characters of a reply or of arguments quoted in a message before it is cut with '…'."""
_NAMES_LIMIT = 20
"""Tool names listed by 'the calls were: ...' before the rest are counted instead."""


@dataclass(frozen=True, slots=True)
class SpecLine:
    """A line of a spec file that a verdict is about: `booking.yaml:7`."""

    spec: str
    """The spec's path as given on the command line (`specs/booking.yaml`)."""
    line: int
    """1-based line in that file; 0 when it is not known."""

    @property
    def file(self) -> str:
        """The file name, as messages print it (`booking.yaml`)."""
        return PurePath(self.spec).name

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class StepRef:
    """Where a step is written, for messages: `step 3 (booking.yaml:14)`."""

    number: int
    """1-based position of the step in the spec's `steps:` list; in a flow with a
    `conversation:`, steps are numbered in the order they are written, those inside its turns
    included."""
    spec: str
    """The spec's path as given (`specs/booking.yaml`); messages print only its file name."""
    line: int
    """1-based line of the step in that file."""
    turn: int | None = None
    """The conversation turn (1-based) whose trajectory the step judges; None for a step that
    judges the whole flow."""

    @property
    def file(self) -> str:
        """The spec file, as it should be printed."""
        return PurePath(self.spec).name

    @property
    def at(self) -> SpecLine:
        """The step's line, as a verdict carries it."""
        return SpecLine(self.spec, self.line)

    def __str__(self) -> str:
        turn = f"turn {self.turn}, " if self.turn is not None else ""
        return f"step {self.number} ({turn}{self.file}:{self.line})"


STRICT_KIND = "strict"
"""The `kind` of the flow-level verdict: the top-level spec key it judges."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one assertion step (or, with `step` None, of the strict check).

    Structured so that no report has to parse `message`: `expected` is the spec line, and
    `observed` is what the trajectory held instead."""

    step: StepRef | None
    """The step judged; None for the flow-level `strict: true` verdict."""
    at: SpecLine
    """The spec line judged: the step's, or that of the `strict:` key."""
    kind: str
    """The step key (`assert_tool_call`, ...), or `strict` for the flow-level verdict."""
    expected: str
    """The assertion as the spec line reads: `assert_tool_call create_booking where ...`."""
    observed: str
    """What the trajectory held instead, in words; empty on a pass."""
    passed: bool
    """Whether the trajectory satisfied it."""
    message: str = ""
    """The whole failure sentence, `<step>: <expected> — <observed>`; empty on a pass."""

    def __str__(self) -> str:
        if not self.passed:
            return self.message
        return f"{self.step}: {self.expected}" if self.step else self.expected


def step_verdict(ref: StepRef, kind: str, expected: str, observed: str | None) -> Verdict:
    """The verdict of one step: passed when nothing contrary was `observed`."""
    if observed is None:
        return Verdict(ref, ref.at, kind, expected, "", True)
    return Verdict(ref, ref.at, kind, expected, observed, False, f"{ref}: {expected} — {observed}")


_FIXES: dict[type[Exception], str] = {
    MatcherError: "fix that variable's value in the environment, or the step",
    ConfigError: "set it before running flowproof, or take the reference out of the step",
}
"""The hint for each error a step's value can raise once `${...}` is resolved."""

_Resolved = tuple[tuple[Clause, str | None], ...]


def evaluate(
    steps: Sequence[tuple[StepRef, Assertion]],
    trajectory: Trajectory,
    *,
    strict: SpecLine | None,
    resolve: Resolver,
    declared: Sequence[str] = (),
) -> list[Verdict]:
    """One Verdict per step, in order, then one for `strict` when it found unlisted calls.

    `strict` is where the spec sets `strict: true` (None when it does not). `resolve` is called
    on every clause value and reply text before matching. A value it cannot resolve (a
    ConfigError) or one that resolves to something the matcher cannot use (a `matches` pattern
    that no longer compiles) is a SpecError naming the step's file and line; anything else it
    raises propagates.
    """
    calls = trajectory.tool_calls
    verdicts: list[Verdict] = []
    taken: set[int] = set()
    # The first call the next assert_tool_call step may take, per boundary: the model's calls
    # and the tool boundary's (MCP `server/tool` names) are two orders, judged separately.
    cursors = {False: 0, True: 0}
    for ref, assertion in steps:
        try:
            if isinstance(assertion, ReplyAssertion):
                problem = _check_reply(assertion, trajectory, resolve)
                verdicts.append(step_verdict(ref, assertion.kind, str(assertion), problem))
                continue
            executed = at_tool_boundary(assertion.tool)
            judged = trajectory.executed if executed else calls
            if assertion.forbid and not executed:
                _refuse_unknown_tool(ref, assertion.tool, trajectory, declared)
            if assertion.forbid:
                problem = _check_forbidden(assertion, judged, _resolve(assertion, resolve))
            else:
                resolved = _resolve(assertion, resolve)
                cursor = cursors[executed]
                index = _first_match(assertion.tool, resolved, judged, cursor)
                if index is None:
                    problem = _explain_missing(assertion.tool, resolved, judged, cursor)
                else:
                    problem, cursors[executed] = None, index + 1
                    if not executed:
                        taken.add(index)
        except (MatcherError, ConfigError) as error:
            # Only known at run time, so the loader could not refuse it; it is still the
            # spec's (or its environment's) fault, not the agent's: exit 2, at the step's line.
            where = f"step {ref.number} ({assertion.kind})"
            hint = _FIXES[type(error)]
            raise SpecError(ref.spec, ref.line or None, f"{where}: {error}", hint) from None
        verdicts.append(step_verdict(ref, assertion.kind, str(assertion), problem))
    unlisted = [i for i in range(len(calls)) if i not in taken]
    if strict is not None and unlisted:
        listed = ", ".join(_at(calls, i, with_name=True) for i in unlisted)
        observed = f"calls not listed by any assert_tool_call: {listed}"
        message = f"{strict}: strict: {observed}"
        verdicts.append(
            Verdict(None, strict, STRICT_KIND, "strict: true", observed, False, message)
        )
    return verdicts


def _refuse_unknown_tool(
    ref: StepRef, tool: str, trajectory: Trajectory, declared: Sequence[str]
) -> None:
    """A guard on a tool the agent never offered the model, that the spec does not declare
    and that was never called is almost always a misspelt name (`send_emial`), and it would
    pass forever: refused at the step's line, like a near miss of a declared name at load. A
    tool the agent withholds from the model on purpose is declared under `tools:`."""
    offered = trajectory.offered
    if offered is None or tool in offered or tool in declared:
        return
    if any(call.name == tool for call in trajectory.tool_calls):
        return
    names = list(dict.fromkeys([*offered, *declared]))
    close = difflib.get_close_matches(tool, names, n=1, cutoff=0.6)
    if close:
        hint = f"did you mean '{close[0]}'?"
    else:
        listed = ", ".join(offered) if offered else "none"
        hint = (
            f"the tools it offered: {listed}; if the agent withholds {tool} from the model on "
            "purpose, declare it under `tools:`"
        )
    raise SpecError(
        ref.spec,
        ref.line or None,
        f"step {ref.number} (assert_no_tool_call) names tool '{tool}', which the agent never "
        "offered the model and no tools: entry declares, so the step could never fail",
        hint,
    )


def at_tool_boundary(tool: str) -> bool:
    """`server/tool` names a call at the MCP tool boundary (what the agent EXECUTED); a bare
    name, a call the model ASKED for. Neither MCP nor model tool names can hold a `/`."""
    return "/" in tool


def _resolve(assertion: ToolCallAssertion, resolve: Resolver) -> _Resolved:
    resolved = []
    for clause in assertion.clauses:
        value = None if clause.value is None else resolve(clause.value)
        if value is not None and value != clause.value:
            try:  # a ${VAR} may have made the value unusable (a regex that does not compile)
                clause.matcher.validate(value, clause.spelled)
            except MatcherError as error:
                raise MatcherError(f"{error} (from {clause.value})") from None
        resolved.append((clause, value))
    return tuple(resolved)


def _holds(call: JudgedCall, resolved: _Resolved) -> bool:
    if resolved and not _is_json(call):
        return False
    return all(c.matcher.check(lookup(call.arguments, c.path), v) for c, v in resolved)


def _first_match(
    tool: str, resolved: _Resolved, calls: Sequence[JudgedCall], start: int
) -> int | None:
    for index in range(start, len(calls)):
        if calls[index].name == tool and _holds(calls[index], resolved):
            return index
    return None


def _explain_missing(
    tool: str, resolved: _Resolved, calls: Sequence[JudgedCall], cursor: int
) -> str:
    named = [i for i, call in enumerate(calls) if call.name == tool]
    if not named:
        if not calls and at_tool_boundary(tool):
            return f"{tool} was never called; the agent called no MCP tools"
        if not calls:
            return f"{tool} was never called; the model asked for no tools"
        return f"{tool} was never called; the calls were: {_names(calls)}"
    early = [i for i in named if i < cursor and _holds(calls[i], resolved)]
    if early:
        where = ", ".join(_at(calls, i) for i in early)
        text = f"{tool} was called, but only before the previous assert_tool_call matched ({where})"
        later = [i for i in named if i >= cursor]
        if later:
            text += "; after it: " + _mismatches(later, calls, resolved)
        return text
    if len(named) == 1:
        mismatch = _mismatch(calls[named[0]], resolved)
        joint = "but" if mismatch.startswith("its arguments") else "with"
        return f"{tool} was called once, {joint} {mismatch}"
    return f"{tool} was called {len(named)} times: {_mismatches(named, calls, resolved)}"


def _mismatches(indices: list[int], calls: Sequence[JudgedCall], resolved: _Resolved) -> str:
    return ", ".join(f"{_mismatch(calls[i], resolved)} ({_at(calls, i)})" for i in indices)


def _mismatch(call: JudgedCall, resolved: _Resolved) -> str:
    """What the call held at each clause that failed: `flight.id = "KQ999" and seat is absent`."""
    if not _is_json(call):
        return f"its arguments {_not_json(call)}: {_quote(call.raw_arguments)}"
    held = []
    for clause, value in resolved:
        found = lookup(call.arguments, clause.path)
        if not clause.matcher.check(found, value):
            held.append(_describe(clause, found))
    return " and ".join(held)


def _describe(clause: Clause, found: Lookup) -> str:
    path = format_path(clause.path)
    return f"{path} = {json_text(found.value)}" if found.present else f"{path} is absent"


def _check_forbidden(
    assertion: ToolCallAssertion, calls: Sequence[JudgedCall], resolved: _Resolved
) -> str | None:
    offending = [
        i
        for i, call in enumerate(calls)
        if call.name == assertion.tool and (not _is_json(call) or _holds(call, resolved))
    ]
    if not offending:
        return None
    who = "the agent called" if at_tool_boundary(assertion.tool) else "the model asked for"
    if len(offending) == 1:
        i = offending[0]
        return f"{who} {assertion.tool} ({_at(calls, i)}) with {_arguments(calls[i])}"
    each = ", ".join(f"{_at(calls, i)} with {_arguments(calls[i])}" for i in offending)
    return f"{who} {assertion.tool} {len(offending)} times: {each}"


def _check_reply(
    assertion: ReplyAssertion, trajectory: Trajectory, resolve: Resolver
) -> str | None:
    text = resolve(assertion.text)
    if trajectory.reply is None:
        reason = trajectory.reply_absent_reason
        return f"the trajectory has no reply: {reason}" if reason else "the trajectory has no reply"
    if text in trajectory.reply:
        return None
    return f"the reply was {_quote(trajectory.reply)}"


def _is_json(call: JudgedCall) -> bool:
    # The trajectory keeps the raw string as `arguments` when it is not JSON. A JSON string
    # argument also parses to a str, but never to one equal to its raw form (that has quotes).
    return not (isinstance(call.arguments, str) and call.arguments == call.raw_arguments)


def _arguments(call: JudgedCall) -> str:
    if _is_json(call):
        return _truncate(json_text(call.arguments))
    return f"arguments that {_not_json(call)}: {_quote(call.raw_arguments)}"


def _not_json(call: JudgedCall) -> str:
    return f"cannot be read ({call.unreadable})" if call.unreadable else "are not JSON"


def _at(calls: Sequence[JudgedCall], index: int, *, with_name: bool = False) -> str:
    where = f"call {index + 1} of {len(calls)}"
    return f"{calls[index].name} ({where})" if with_name else where


def _names(calls: Sequence[JudgedCall]) -> str:
    names = [call.name for call in calls[:_NAMES_LIMIT]]
    more = len(calls) - len(names)
    return ", ".join(names) + (f", and {more} more" if more else "")


def _truncate(text: str) -> str:
    return clip(text, _LIMIT)


def _quote(text: str) -> str:
    """A JSON string literal, so quotes and newlines inside stay on one readable line."""
    return json.dumps(_truncate(text), ensure_ascii=False)

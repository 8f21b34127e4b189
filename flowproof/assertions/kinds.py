"""The assertion step kinds a spec's `steps:` may hold, in one registry that subclassing fills.

A step kind is a class, never instantiated: it declares its step key (`name`), how its text is
compiled (`parse`), which evaluator judges it, which trace lane that evaluator reads
(`judges`), what a run record's control row reports for it (`control_lane`), and its section of
docs/steps.md (`docs`). `__init_subclass__` registers it; two classes claiming one name is a
TypeError at class definition, naming both (as in matchers.py).

The loader, the judge, the run record and docgen all read this registry, so a new kind (an
egress lane, say) is one class here plus its evaluator.

Kinds may share an evaluator: the three trajectory kinds do, because `assert_tool_call` steps
take calls in order with one cursor between them and `strict` reports the calls none took.
The judge calls each evaluator once with all of its steps, in spec order, and an `Evidence`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from flowproof.assertions.egress import EgressEvidence, check_no_egress, parse_no_egress
from flowproof.assertions.evaluate import Resolver, SpecLine, StepRef, Verdict, evaluate
from flowproof.assertions.grammar import parse_reply, parse_tool_call
from flowproof.assertions.secrets import Body, check_secrets, parse_secret_step
from flowproof.assertions.trajectory import Trajectory
from flowproof.core.errors import GrammarError
from flowproof.core.lanes import MODEL_LANE
from flowproof.core.registry import refuse_clash

"""The trace lane of the model traffic: requests, responses, the tool calls the model asked for."""


class CompiledStep(Protocol):
    """What a kind's parser returns: its `str` reads like the spec line."""

    @property
    def kind(self) -> str:
        """The step key it was compiled from."""
        ...


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything a flow left behind that an evaluator may judge, plus how to read `${VAR}`."""

    trajectory: Trajectory
    """The tool calls the model asked for, in order, and the reply of the main thread."""
    bodies: tuple[Body, ...]
    """Every request and response body that crossed the model boundary, labelled."""
    secrets: Mapping[str, str] = field(repr=False)
    """Each variable an assert_no_secret_leak step names → its value (never printed, and kept
    out of the repr, so a traceback showing the evidence does not show them)."""
    resolve: Resolver
    """Substitutes `${VAR}` in a step's value text; raises ConfigError for an unset one."""
    strict: SpecLine | None
    """Where the spec sets `strict: true`; None when the flow is not strict."""
    egress: EgressEvidence | None = None
    """What containment enforced and refused; None when the flow engaged none."""
    declared_tools: tuple[str, ...] = ()
    """The tool names the spec's `tools:` entries declare."""


Evaluator = Callable[[Sequence[tuple[StepRef, Any]], Evidence], list[Verdict]]
"""Judges all of a flow's steps that share it, in spec order: one Verdict per step, plus any
flow-level verdict it owns (strict) last."""

_REGISTRY: dict[str, type[StepKind]] = {}
_DECLARED = ("control_lane", "docs", "evaluator")
"""What every kind must declare besides `name` (`judges` has a default, `parse` is a method)."""


class StepKind:
    """Base class; a subclass that declares `name` is a step kind and registers itself."""

    name: ClassVar[str]
    """The step key, as a spec writes it: `assert_tool_call`."""
    judges: ClassVar[str] = MODEL_LANE
    """The trace lane its evaluator reads."""
    control_lane: ClassVar[str]
    """What a run record's control row lists for a flow that uses it: `tool_call`."""
    docs: ClassVar[str]
    """Its section of docs/steps.md, in Markdown; `<<name>>` marks an example docgen renders."""
    evaluator: ClassVar[Evaluator]
    """The function that judges steps of this kind (shared by kinds that share state)."""
    bare: ClassVar[bool] = False
    """True for a step written as a bare key (`- assert_no_egress`), which takes no text."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:  # a subclass without its own name is a shared helper
            _register(cls)

    @classmethod
    def parse(cls, text: str) -> CompiledStep:
        """Compile the step's text; a StepError quotes what is wrong with it."""
        raise NotImplementedError


def _register(cls: type[StepKind]) -> None:
    refuse_clash("step kind", cls.name, _REGISTRY.get(cls.name), cls)
    # Refused when defined, so a half-declared kind cannot wait for a spec to trip on it.
    missing = [attr for attr in _DECLARED if not hasattr(cls, attr)]
    if missing:
        raise TypeError(f"step kind '{cls.name}' ({cls.__name__}) declares no {', '.join(missing)}")
    _REGISTRY[cls.name] = cls


def step_kinds() -> list[type[StepKind]]:
    """Every step kind, in definition order (the order the docs list them in)."""
    return list(_REGISTRY.values())


def step_kind(name: str) -> type[StepKind]:
    """The kind a step key names; an unknown one is a GrammarError listing them all."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise GrammarError(
            f"unknown assertion step '{name}'; expected one of: {', '.join(_REGISTRY)}"
        ) from None


def parse_step(name: str, text: str) -> CompiledStep:
    """Compile one assertion step: `name` is the step's key, `text` its value."""
    return step_kind(name).parse(text)


def _judge_trajectory(steps: Sequence[tuple[StepRef, Any]], evidence: Evidence) -> list[Verdict]:
    return evaluate(
        steps,
        evidence.trajectory,
        strict=evidence.strict,
        resolve=evidence.resolve,
        declared=evidence.declared_tools,
    )


def _judge_secrets(steps: Sequence[tuple[StepRef, Any]], evidence: Evidence) -> list[Verdict]:
    return [check_secrets(ref, step, evidence.bodies, evidence.secrets) for ref, step in steps]


class _TrajectoryKind(StepKind):
    # Shared, because the ordered subsequence and `strict` need every trajectory step at once.
    evaluator = _judge_trajectory


class AssertToolCall(_TrajectoryKind):
    name = "assert_tool_call"
    control_lane = "tool_call"

    @classmethod
    def parse(cls, text: str) -> CompiledStep:
        return parse_tool_call(text)

    docs = """\
## assert_tool_call

    assert_tool_call: <tool> [where <path> <matcher> [<value>] (and <path> <matcher> [<value>])*]

Passes when the model asked for `<tool>` with arguments meeting every clause. Without `where`,
any call of the tool will do. Assert the arguments that carry the intent, not the whole object:
the cassette already pins every argument byte for byte, so one you do not assert still fails
replay if it changes.

A failure says what the trajectory held instead (every message on this page is produced by
the evaluator when the page is generated):

<<once>>

The part after the dash takes one of these forms:

<<tails>>

- Each call of the tool, with the value (as JSON) at every clause path that failed, or
  `is absent`; "once" leaves out the call's position.
- A tool the model never asked for: the calls it did ask for, or that it asked for none.
- A match that exists only before the call the previous `assert_tool_call` took: the order is
  wrong (see below).
- Arguments that are not JSON never satisfy a clause, and are quoted whole (cut at 200
  characters).

## Order: a subsequence, or `strict: true`

`assert_tool_call` steps are an ordered subsequence of the tool calls. Each step takes the
first call, at or after the one the previous step took, with that name and every clause
holding. Calls nobody asserted may come in between, which is the right default for an agent
that looks things up on its way. A step that fails takes no call, so the steps after it are
still judged from where the last match left off.

A flow with `strict: true` at its top level also fails when the model asked for any call that
no `assert_tool_call` step took, naming each and the line of `strict:`:

<<strict>>
"""


class AssertNoToolCall(_TrajectoryKind):
    name = "assert_no_tool_call"
    control_lane = "no_tool_call"

    @classmethod
    def parse(cls, text: str) -> CompiledStep:
        return parse_tool_call(text, forbid=True)

    docs = """\
## assert_no_tool_call

    assert_no_tool_call: <tool> [where <path> <matcher> [<value>] (and ...)*]

Fails if ANY call of `<tool>` (meeting every clause, when there are clauses) appears anywhere in
the trajectory, whatever its position. This is the guard path: record a turn where the model
is pushed toward the dangerous call, and assert it never happened.

<<forbid>>

Read precisely, it proves that the MODEL never asked for the tool: either because it was not
given the chance (the request left the tool out, which is enforcement in code) or because it
had the chance and did not take it (which is the model's choice on the day of the recording).
Whether the agent then RAN a tool is not visible at the model boundary, and nothing there
keeps a tool from executing: a `tools:` entry with a `result:` replaces only what the model is
told the tool returned, and every run prints a warning saying so. A call whose arguments are
not JSON cannot be shown to miss the clauses, so it counts against the assertion.

A guard on a name the agent never offered the model (in the `tools` of any recorded request),
that no `tools:` entry declares and that the model never called could never fail, and is
almost always a misspelling. It is refused as a spec error (exit 2) at the step's line, with
the closest offered name or the list of offered ones:

    specs/booking.yaml:11: step 3 (assert_no_tool_call) names tool 'send_emial', which the
    agent never offered the model and no tools: entry declares, so the step could never fail;
    did you mean 'send_email'?

A tool the agent withholds from the model on purpose (enforcement in code) is declared under
`tools:`, and its guard is judged as usual.
"""


class AssertReply(_TrajectoryKind):
    name = "assert"
    control_lane = "reply"

    @classmethod
    def parse(cls, text: str) -> CompiledStep:
        return parse_reply(text)

    docs = """\
## assert: reply contains / reply is

    assert: reply contains <text>
    assert: reply is <text>

Passes when `<text>` is a substring of the final assistant message of the conversation the flow
is about (case-sensitive). `reply is` is an alias with the same substring meaning, not exact
equality. The reply is read at the model boundary, never from the agent's stdout. A trajectory
whose last turn is a tool call has no reply, and the step fails saying so:

<<reply>>

The text runs to the end of the line and may contain the word "and".

Inside a turn of a `conversation:` step ([specs.md](specs.md#conversations-conversation)),
every step judges that turn alone: `reply contains` reads the turn's reply, and
`assert_tool_call` / `assert_no_tool_call` the tool calls the model asked for in that turn.
"""


class AssertNoSecretLeak(StepKind):
    name = "assert_no_secret_leak"
    control_lane = "secret_leak"
    evaluator = _judge_secrets

    @classmethod
    def parse(cls, text: str) -> CompiledStep:
        return parse_secret_step(text)

    docs = """\
## assert_no_secret_leak

    assert_no_secret_leak: NAME [NAME...]

Names environment VARIABLES, never values. When the flow runs, each value is read from
flowproof's environment and looked for in every request and response body that crossed the
model boundary: at record before the trace is written (so a leak writes no trace), at replay in
the traffic served. A failure names the variable and where its value appeared, never the value;
an unset or empty variable is a configuration error (exit 2), not a pass. The value is found
in every spelling an agent sends without meaning to change it (JSON-escaped inside a tool
result, percent-encoded, base64); see [controls.md](controls.md) for the list and for what
stays out of reach.

<<secret>>
"""


def _judge_egress(steps: Sequence[tuple[StepRef, Any]], evidence: Evidence) -> list[Verdict]:
    return [check_no_egress(ref, step, evidence.egress) for ref, step in steps]


class AssertNoEgress(StepKind):
    name = "assert_no_egress"
    judges = "egress"
    control_lane = "egress"
    evaluator = _judge_egress
    bare = True

    @classmethod
    def parse(cls, text: str) -> CompiledStep:
        return parse_no_egress(text)

    docs = """\
## assert_no_egress

    - assert_no_egress

A bare step that CERTIFIES the run: it passes only when the agent ran under egress containment
(Linux, a `command:` agent) and attempted no destination that `agent.allow_egress` does not
declare. Loopback is exempt wholesale. A refused attempt is named:

<<egress_blocked>>

Where nothing contained the agent (a `url:` service, macOS, Windows, a kernel without the
features) the step fails rather than pass vacuously, whatever the agent did:

<<egress_uncontained>>

`allow_egress` without this step restricts what the agent reaches on Linux, but certifies
nothing. See [containment.md](containment.md).
"""

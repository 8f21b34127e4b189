"""YAML → FlowSpec, with every error pointing at the file, the line and the fix.

The YAML is parsed twice on purpose: once into plain data for pydantic, and once into nodes so
that a pydantic error location (`('tools', 0, 'reslt')`) can be turned back into a line number.
Specs are small; the clarity is worth the second parse.

YAML aliases (`*name`, and so `<<: *name` merge keys) are refused before either parse: an alias
repeats a node without copying it, so a 1 KB file of nested aliases ("billion laughs") stands
for billions of values and would cost minutes and gigabytes to walk. Nothing a spec says needs
one; a refused file names the line of its first alias. So is nesting deeper than MAX_DEPTH.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from flowproof.assertions.evaluate import StepRef, at_tool_boundary
from flowproof.assertions.grammar import ToolCallAssertion
from flowproof.assertions.kinds import CompiledStep, step_kind, step_kinds
from flowproof.core.errors import SpecError, StepError
from flowproof.spec.model import FlowSpec

Location = tuple[str | int, ...]
MAX_DEPTH = 50
"""Collections nested deeper than this are refused before they are parsed in full."""
PROMPT = "prompt"
"""The step that drives a single-turn agent rather than judging it; every other is a step kind
or the conversation."""
CONVERSATION = "conversation"
"""The step that drives a multi-turn agent: its user turns, each with the steps that judge it."""
TURN_KEYS = ("user", "steps")


@dataclass(frozen=True, slots=True)
class AssertionStep:
    """An assertion step as written, with where it came from and its compiled form."""

    ref: StepRef
    kind: str
    """The step key: a name in the step-kind registry (assertions/kinds.py)."""
    text: str
    assertion: CompiledStep

    @property
    def turn(self) -> int | None:
        """The conversation turn the step judges; None for a flow-wide step."""
        return self.ref.turn


@dataclass(frozen=True, slots=True)
class UserTurn:
    """One user turn of a `conversation:` step."""

    number: int
    """1-based: turn 1 is the agent's FLOWPROOF_PROMPT; every later one is a line on a command
    agent's stdin, or a POST of its own to a `url:` service."""
    text: str
    line: int | None


@dataclass(frozen=True, slots=True)
class LoadedSpec:
    """A validated spec and its steps, split into what drives the agent and what judges it."""

    path: Path
    spec: FlowSpec
    prompts: tuple[str, ...]
    """The task a single-turn agent is given; in a conversation, its first user turn alone."""
    assertions: tuple[AssertionStep, ...]
    """Every assertion step, those inside a conversation's turns included (each knows its
    turn)."""
    lines: Mapping[Location, int] = field(default_factory=dict, repr=False)
    """The line of every key and list item, by location: `("tools", 0, "result")` → 7."""
    conversation: tuple[UserTurn, ...] = ()
    """The user turns of the flow's `conversation:` step; empty for a single-turn flow."""

    def line_of(self, *location: str | int) -> int | None:
        """The line a key or list item is written on (`line_of("strict")`, `line_of("tools",
        0)`), or None when the spec does not write it."""
        return self.lines.get(location)


def load_spec(path: Path) -> LoadedSpec:
    spec, lines = validated(path, FlowSpec)
    prompts, assertions, turns = _parse_steps(path, spec.steps, lines)
    if turns:
        prompts = [turns[0].text]
    if not prompts:
        raise SpecError(
            path,
            lines.get(("steps",)),
            "the flow has no prompt step",
            "add `- prompt: <the task for the agent>` to steps",
        )
    _check_tool_names(path, spec, assertions)
    return LoadedSpec(path, spec, tuple(prompts), tuple(assertions), lines, tuple(turns))


ModelT = TypeVar("ModelT", bound=BaseModel)


def parse_model(path: Path, model: type[ModelT]) -> ModelT:
    """Any flowproof YAML file → its pydantic model, with the same file:line errors."""
    return validated(path, model)[0]


def validated(path: Path, model: type[ModelT]) -> tuple[ModelT, dict[Location, int]]:
    data, lines = _parse_yaml(path, _read(path))
    try:
        return model.model_validate(data), lines
    except ValidationError as exc:
        raise _spec_error(path, exc, lines, model) from None


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(path, None, f"cannot read the spec: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Point at the first bad byte: a Latin-1 `é` in one prompt is the usual cause.
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = f"0x{data[exc.start]:02x}"
        raise SpecError(
            path, line, f"not UTF-8 text (byte {byte} at column {column})", "save the file as UTF-8"
        ) from None


def _parse_yaml(path: Path, text: str) -> tuple[Any, dict[Location, int]]:
    try:
        _refuse_aliases(path, text)
        root, data = _compose_and_construct(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        if "maximum nesting depth" in problem:  # libyaml's own limit, met before ours
            raise _too_deep(path, line) from None
        raise SpecError(path, line, f"not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(
            path,
            1,
            "a spec must be a mapping",
            "start with `name:`, `app: agent`, `agent:` and `steps:`",
        )
    lines: dict[Location, int] = {}
    if root is not None:  # None only for an empty document, which failed the check above
        _index_lines(path, root, (), lines)
    return data, lines


_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML was built with it (the wheels are): several times faster than
the pure-Python one, with the same marks and the same safe constructors."""


def _compose_and_construct(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree (for the line of every key) and the data built from that same tree: one
    parse, not one per use."""
    loader = _LOADER(text)
    try:
        root = loader.get_single_node()
        return root, (loader.construct_document(root) if root is not None else None)
    finally:
        loader.dispose()


def _refuse_aliases(path: Path, text: str) -> None:
    """Read the event stream (flat, so cheap whatever the file holds) up to the first alias,
    or the first collection nested deeper than MAX_DEPTH (PyYAML's scanner slows down
    quadratically with the depth, and its composer recurses)."""
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep(path, _line_of(event))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            raise SpecError(
                path,
                _line_of(event),
                f"YAML alias *{event.anchor} is not supported in flowproof files",
                f"write the value out in full where it is used (and drop the &{event.anchor} "
                "anchor)",
            )


def _too_deep(path: Path, line: int | None) -> SpecError:
    return SpecError(
        path,
        line,
        f"nested more than {MAX_DEPTH} levels deep",
        "a spec needs a few levels, not dozens",
    )


def _line_of(event: yaml.Event) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def _index_lines(path: Path, node: yaml.Node, loc: Location, lines: dict[Location, int]) -> None:
    """Record the line of every key and list item, and refuse duplicate keys (YAML keeps the
    last one silently, which would hide half of what the author wrote)."""
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise SpecError(
                    path, key_node.start_mark.line + 1, f"duplicate key '{key}'", "keep one of them"
                )
            seen.add(key)
            _index_lines(path, value_node, (*loc, key), lines)
            lines[(*loc, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(path, item, (*loc, index), lines)


def _line_for(loc: Location, lines: dict[Location, int]) -> int | None:
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return lines.get(())


def _spec_error(
    path: Path, exc: ValidationError, lines: dict[Location, int], root: type[BaseModel]
) -> SpecError:
    # A misspelled key also makes the real key "missing": report the misspelling, which is
    # the cause and carries the did-you-mean.
    error = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
    loc: Location = tuple(part for part in error["loc"] if not str(part).startswith("function-"))
    where = _format_loc(loc[:-1]) if loc[:-1] else "the spec"
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        valid = _valid_keys(root, loc[:-1])
        close = difflib.get_close_matches(key, valid, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"valid keys: {', '.join(valid)}"
        return SpecError(path, _line_for(loc, lines), f"unknown key '{key}' in {where}", hint)
    if kind == "missing":
        key = str(loc[-1])
        return SpecError(
            path,
            _line_for(loc[:-1], lines),
            f"missing required key '{key}' in {where}",
            _MISSING_HINTS.get(key, f"add `{key}:`"),
        )
    return SpecError(path, _line_for(loc, lines), f"{_format_loc(loc)}: {_describe(error)}")


_MISSING_HINTS = {
    "command": "add `command: <the shell command that starts your agent>`",
    "app": "add `app: agent`",
    "steps": "add `steps:` with at least one `- prompt: ...`",
    "name": "add `name: <what this flow checks>`",
    "agent": "add `agent:` with a `command:`",
}


def _describe(error: Any) -> str:
    if error["type"] == "literal_error":
        return f"expected {error['ctx']['expected']}, got {error['input']!r}"
    return str(error["msg"]).replace("Value error, ", "")


def _format_loc(loc: Location) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _valid_keys(root: type[BaseModel], loc: Location) -> list[str]:
    """The keys a mapping at `loc` accepts, found by walking the pydantic models."""
    model: Any = root
    for part in loc:
        if isinstance(part, int):
            continue
        if (
            not (isinstance(model, type) and issubclass(model, BaseModel))
            or part not in model.model_fields
        ):
            return []
        model = _model_in(model.model_fields[part].annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return []


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation) if get_origin(annotation) else ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _parse_steps(
    path: Path, steps: list[Any], lines: dict[Location, int]
) -> tuple[list[str], list[AssertionStep], list[UserTurn]]:
    prompts: list[str] = []
    assertions: list[AssertionStep] = []
    turns: list[UserTurn] = []
    numbers = itertools.count(1)  # document order: a turn's steps are numbered where written
    for index, step in enumerate(steps):
        line = lines.get(("steps", index))
        number = next(numbers)
        if isinstance(step, dict) and len(step) == 1 and CONVERSATION in step:
            if turns:
                raise SpecError(
                    path, line, "a flow has one conversation step", "put every turn in the first"
                )
            turns = _parse_conversation(path, index, step[CONVERSATION], lines, numbers, assertions)
            continue
        kind, text = _step_kind_and_text(path, step, line)
        if kind == PROMPT:
            prompts.append(text)
            continue
        ref = StepRef(number=number, spec=str(path), line=line or 0)
        assertions.append(_assertion_step(path, ref, kind, text))
    if turns and prompts:
        raise SpecError(
            path,
            lines.get(("steps", next(i for i, s in enumerate(steps) if _is_prompt(s)))),
            "a flow with a conversation step has no prompt step: the conversation's first "
            "user turn is the task the agent starts with",
            "move the prompt's text into the first turn's `user:`",
        )
    return prompts, assertions, turns


def _is_prompt(step: Any) -> bool:
    return isinstance(step, dict) and PROMPT in step


def _assertion_step(path: Path, ref: StepRef, kind: str, text: str) -> AssertionStep:
    try:
        assertion = step_kind(kind).parse(text)
    except StepError as exc:
        raise SpecError(path, ref.line or None, f"step {ref.number} ({kind}): {exc}") from None
    return AssertionStep(ref, kind, text, assertion)


def _parse_conversation(
    path: Path,
    index: int,
    value: Any,
    lines: dict[Location, int],
    numbers: Iterator[int],
    assertions: list[AssertionStep],
) -> list[UserTurn]:
    """The user turns of a `conversation:` step, each turn's own steps appended to
    `assertions` with the turn they judge."""
    where: Location = ("steps", index, CONVERSATION)
    if not isinstance(value, list) or not value:
        raise SpecError(
            path,
            _line_for(where, lines),
            "a conversation is a list of turns, each `- user: <what the user says>` with the "
            "`steps:` that judge what the agent did in that turn",
        )
    turns = []
    for position, item in enumerate(value):
        turn_at = (*where, position)
        number = position + 1
        text, steps = _turn_parts(path, number, item, turn_at, lines)
        turns.append(UserTurn(number, text, lines.get((*turn_at, "user"))))
        for step_index, step in enumerate(steps):
            line = lines.get((*turn_at, "steps", step_index))
            kind, step_text = _step_kind_and_text(path, step, line, in_turn=True)
            ref = StepRef(number=next(numbers), spec=str(path), line=line or 0, turn=number)
            assertions.append(_assertion_step(path, ref, kind, step_text))
    return turns


def _turn_parts(
    path: Path, number: int, item: Any, at: Location, lines: dict[Location, int]
) -> tuple[str, list[Any]]:
    """A turn's `user:` text and its steps, every way of writing them wrong refused."""
    line = _line_for(at, lines)
    if not isinstance(item, dict):
        raise SpecError(
            path, line, f"conversation turn {number} must be a mapping with `user:` and `steps:`"
        )
    for key in item:
        if key not in TURN_KEYS:
            close = difflib.get_close_matches(str(key), TURN_KEYS, n=1)
            hint = f"did you mean '{close[0]}'?" if close else "valid keys: user, steps"
            raise SpecError(
                path,
                lines.get((*at, key), line),
                f"unknown key '{key}' in conversation turn {number}",
                hint,
            )
    text = item.get("user")
    if not isinstance(text, str | int | float) or isinstance(text, bool) or not str(text).strip():
        raise SpecError(
            path,
            lines.get((*at, "user"), line),
            f"conversation turn {number} needs `user:` with the text the user says",
        )
    steps = item.get("steps", [])
    if steps is None:
        steps = []
    if not isinstance(steps, list):
        raise SpecError(
            path,
            lines.get((*at, "steps"), line),
            f"conversation turn {number}: `steps:` is a list of assertion steps",
        )
    return str(text).strip(), steps


def _step_names(in_turn: bool = False) -> list[str]:
    drivers = [] if in_turn else [PROMPT, CONVERSATION]
    return [*drivers, *(kind.name for kind in step_kinds())]


def _step_kind_and_text(
    path: Path, step: Any, line: int | None, in_turn: bool = False
) -> tuple[str, str]:
    """`in_turn`: the step is one of a conversation turn's, where only assertions are written."""
    names = _step_names(in_turn)
    if (
        in_turn
        and isinstance(step, dict)
        and len(step) == 1
        and (PROMPT in step or CONVERSATION in step)
    ):
        raise SpecError(
            path,
            line,
            "a conversation turn's steps judge it; what the user says is the turn's `user:`",
            "start another turn (`- user: ...`) for the next thing the user says",
        )
    if isinstance(step, str) and step in names and step_kind(step).bare:
        return step, ""  # `- assert_no_egress`: a bare step kind takes no text
    if isinstance(step, dict) and len(step) == 1:
        ((key, value),) = step.items()
        if value is None and key in names and key != PROMPT and step_kind(key).bare:
            return key, ""
    if not isinstance(step, dict) or len(step) != 1:
        raise SpecError(
            path,
            line,
            "a step must be a one-key mapping such as `- prompt: ...`",
            f"step kinds: {', '.join(names)}",
        )
    ((kind, text),) = step.items()
    if kind == CONVERSATION:
        raise SpecError(path, line, "a conversation step holds a list of turns (`- user: ...`)")
    if kind not in names:
        close = difflib.get_close_matches(str(kind), names, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"step kinds: {', '.join(names)}"
        raise SpecError(path, line, f"unknown step '{kind}'", hint)
    if not isinstance(text, str | int | float) or isinstance(text, bool) or not str(text).strip():
        raise SpecError(path, line, f"step '{kind}' needs a line of text after the colon")
    return kind, str(text).strip()


def _check_tool_names(path: Path, spec: FlowSpec, steps: list[AssertionStep]) -> None:
    """An assertion may name a tool no `tools:` entry declares, but not one that is a near
    miss of a declared name: `serch_flights` beside `search_flights` is a typo that would
    otherwise make a guard flow pass forever."""
    declared = [tool.name for tool in spec.tools]
    servers = [server.name for server in spec.mcp]
    for step in steps:
        tool = step.assertion.tool if isinstance(step.assertion, ToolCallAssertion) else None
        if tool is not None and at_tool_boundary(tool):
            _check_server_of(path, step, tool, servers)
            if step.turn is not None:
                raise SpecError(
                    path,
                    step.ref.line or None,
                    f"step {step.ref.number} judges '{tool}' at its MCP server inside "
                    f"conversation turn {step.turn}; the tool boundary is judged for the "
                    "whole flow",
                    "move the step after the conversation",
                )
            continue
        if tool is None or tool in declared:
            continue
        close = difflib.get_close_matches(tool, declared, n=1, cutoff=0.8)
        if close:
            raise SpecError(
                path,
                step.ref.line or None,
                f"step {step.ref.number} names tool '{tool}', which no tools: entry declares",
                f"did you mean '{close[0]}'?",
            )


def _check_server_of(path: Path, step: AssertionStep, tool: str, servers: list[str]) -> None:
    """`<server>/<tool>` judges what the agent executed at an MCP server, so the server must be
    one the flow declares under `mcp:` (flowproof sees no other server's calls)."""
    server, _, name = tool.partition("/")
    if server in servers and name:
        return
    if not name:
        problem = f"step {step.ref.number} names '{tool}', which has no tool after the '/'"
        raise SpecError(path, step.ref.line or None, problem, "write `<server>/<tool>`")
    close = difflib.get_close_matches(server, servers, n=1)
    hint = (
        f"did you mean '{close[0]}/{name}'?"
        if close
        else "declare the server under `mcp:`, or drop the `<server>/` to judge what the model "
        "asked for"
    )
    raise SpecError(
        path,
        step.ref.line or None,
        f"step {step.ref.number} names tool '{tool}' at MCP server '{server}', which no mcp: "
        "entry declares",
        hint,
    )

"""`flowproof suggest SPEC [--write]`: assertion steps read off the spec's recorded trace.

Prints a `steps:` list (stdout, YAML) that the recorded trajectory satisfies, chosen by the
rules in flowproof/assertions/suggest.py; `--write` adds those steps to the spec itself, as
text, after its existing steps. Exit 0 printed (or written), 2 when the spec or its trace
cannot be read, or when `--write` would add to steps the author already wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from flowproof.assertions.suggest import (
    Recording,
    SeenResult,
    Suggestion,
    render,
    render_items,
    suggest,
)
from flowproof.cli.output import out
from flowproof.core.errors import ConfigError
from flowproof.core.files import write_text_atomic
from flowproof.core.words import plural
from flowproof.engine.lanes import check_lanes, trajectory
from flowproof.guards.redaction import REDACT, record_keys
from flowproof.spec.append import CannotAppend, append_steps
from flowproof.spec.load import LoadedSpec, load_spec
from flowproof.spec.suite import refuse_shared_trace
from flowproof.trace.model import Trace
from flowproof.trace.store import load_trace, trace_path_for

WRITTEN_KINDS = ("assert_tool_call", "assert_no_tool_call", "assert")
"""The step kinds suggest writes; a spec holding any of them is not added to by --write."""


def suggest_command(spec_arg: str, write: bool) -> None:
    spec_path = Path(spec_arg)
    if not spec_path.is_file():
        raise ConfigError(f"{spec_path}: no such spec file")
    refuse_shared_trace(spec_path)
    loaded = load_spec(spec_path)
    trace_path = trace_path_for(spec_path)
    if not trace_path.exists():
        raise ConfigError(
            f"{spec_path}: no trace to suggest steps from ({trace_path} does not exist); "
            f"record the flow first: `flowproof record {spec_path}`"
        )
    trace = load_trace(trace_path, credentials=record_keys(os.environ))
    check_lanes(trace, str(trace_path))
    steps = suggest(recording_of(trace, "\n".join(loaded.prompts)))
    if write:
        _write(loaded, steps)
        return
    click.echo(REDACT(render(steps)), nl=False)
    out(
        f"{plural(len(steps), 'step')} the recording in {trace_path} satisfies; review them, "
        f"then paste them after the prompt step, or add them with "
        f"`flowproof suggest {spec_path} --write`"
    )


def recording_of(trace: Trace, task: str) -> Recording:
    """What the trace shows: its trajectory, every tool result told to the model, and every
    tool the requests offered."""
    results: list[SeenResult] = []
    for number, turn in enumerate(trace.turns):
        facts = turn.facts
        if facts is not None:
            results += [SeenResult(number, tool, content) for tool, content in facts.tool_results]
    recorded = trajectory(trace.lanes)
    return Recording(task, recorded, tuple(results), recorded.offered or ())


def _write(loaded: LoadedSpec, steps: list[Suggestion]) -> None:
    path = loaded.path
    existing = [step for step in loaded.assertions if step.kind in WRITTEN_KINDS]
    if existing:
        first = existing[0].ref.line or None
        named = ", ".join(f"step {s.ref.number} ({s.kind}, line {s.ref.line})" for s in existing)
        where = f"{path}:{first}" if first else str(path)
        raise ConfigError(
            f"{where}: the spec already has assertion steps ({named}); --write only adds to a "
            f"spec without them, so that no step of yours is reordered or duplicated: print the "
            f"suggestion with `flowproof suggest {path}` and merge it by hand"
        )
    if not steps:
        out(f"{path}: nothing to add: the recording holds no tool call and no reply")
        return
    expected = [{step.kind: step.text} for step in steps]
    try:
        text = append_steps(
            path.read_text(encoding="utf-8"), lambda indent: render_items(steps, indent), expected
        )
    except CannotAppend as exc:
        raise ConfigError(f"{path}: cannot add the suggested steps: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the spec: {exc}") from None
    write_text_atomic(path, text)
    out(f"{path}: added {plural(len(steps), 'step')} at the end of its steps; review the diff")

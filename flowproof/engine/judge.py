"""The assertion steps of a flow, judged against what crossed the boundary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from flowproof.assertions.egress import EgressEvidence
from flowproof.assertions.evaluate import SpecLine, StepRef, Verdict
from flowproof.assertions.kinds import Evaluator, Evidence, step_kind, step_kinds
from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import Trajectory
from flowproof.engine.context import FlowContext
from flowproof.spec.refs import resolve
from flowproof.trace.trajectory import build_trajectory


@dataclass(frozen=True, slots=True)
class Scope:
    """What one conversation turn's steps judge: that turn's trajectory and bodies alone."""

    trajectory: Trajectory
    bodies: tuple[Body, ...]


def judge(
    context: FlowContext,
    trajectory: Trajectory,
    bodies: Sequence[Body],
    egress: EgressEvidence | None = None,
    turns: Mapping[int, Scope] | None = None,
) -> tuple[Verdict, ...]:
    """Every verdict of the flow, in spec order, with the flow-level strict verdict last.

    Each registered evaluator is called once for the flow-wide steps, with its steps in spec
    order; also when it has none, because `strict: true` judges a flow that lists no
    assert_tool_call at all. In a conversation, each turn's steps are judged apart, against
    `turns[n]` (that turn's trajectory), and `strict:` counts the flow-wide steps alone. A value
    that turns out unusable once `${VAR}` is resolved is a SpecError at the step's line."""
    loaded, environ = context.loaded, context.environ
    strict = (
        SpecLine(str(loaded.path), loaded.line_of("strict") or 0) if loaded.spec.strict else None
    )
    evidence = Evidence(
        trajectory=trajectory,
        bodies=tuple(bodies),
        secrets=context.secrets,
        resolve=lambda text: resolve(text, environ),
        strict=strict,
        egress=egress,
        declared_tools=tuple(tool.name for tool in loaded.spec.tools),
    )
    groups: dict[Evaluator, list[tuple[StepRef, Any]]] = {
        kind.evaluator: [] for kind in step_kinds()
    }
    in_turns: dict[int, dict[Evaluator, list[tuple[StepRef, Any]]]] = {}
    for step in loaded.assertions:
        group = groups if step.turn is None else in_turns.setdefault(step.turn, {})
        group.setdefault(step_kind(step.kind).evaluator, []).append((step.ref, step.assertion))
    verdicts = [
        verdict for evaluator, steps in groups.items() for verdict in evaluator(steps, evidence)
    ]
    for number, turn_groups in in_turns.items():
        scope = (turns or {}).get(number, Scope(build_trajectory(()), ()))
        scoped = replace(evidence, trajectory=scope.trajectory, bodies=scope.bodies, strict=None)
        verdicts += [
            verdict
            for evaluator, steps in turn_groups.items()
            for verdict in evaluator(steps, scoped)
        ]
    # Spec order; a verdict of no step (strict) goes last. The sort is stable.
    return tuple(sorted(verdicts, key=lambda v: v.step.number if v.step else float("inf")))

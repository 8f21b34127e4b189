"""The assertion steps of a flow, judged against what crossed the boundary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowproof.assertions.egress import EgressEvidence
from flowproof.assertions.evaluate import SpecLine, StepRef, Verdict
from flowproof.assertions.kinds import Evaluator, Evidence, step_kind, step_kinds
from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import Trajectory
from flowproof.engine.context import FlowContext
from flowproof.spec.refs import resolve


def judge(
    context: FlowContext,
    trajectory: Trajectory,
    bodies: Sequence[Body],
    egress: EgressEvidence | None = None,
) -> tuple[Verdict, ...]:
    """Every verdict of the flow, in spec order, with the flow-level strict verdict last.

    Each registered evaluator is called once, with its steps in spec order; also when it has
    none, because `strict: true` judges a flow that lists no assert_tool_call at all. A value
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
    for step in loaded.assertions:
        groups[step_kind(step.kind).evaluator].append((step.ref, step.assertion))
    verdicts = [
        verdict for evaluator, steps in groups.items() for verdict in evaluator(steps, evidence)
    ]
    # Spec order; a verdict of no step (strict) goes last. The sort is stable.
    return tuple(sorted(verdicts, key=lambda v: v.step.number if v.step else float("inf")))

"""The assertion steps of a flow, judged against what crossed the boundary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowproof.assertions.egress import EgressEvidence
from flowproof.assertions.evaluate import SpecLine, StepRef, Verdict
from flowproof.assertions.kinds import Evaluator, Evidence, step_kind, step_kinds
from flowproof.assertions.secrets import Body, SecretLeakAssertion
from flowproof.assertions.trajectory import Trajectory
from flowproof.errors import ConfigError
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve


def declared_secrets(loaded: LoadedSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """name → value for every variable an assert_no_secret_leak step names. An unset one is a
    configuration error: a scan for nothing would pass vacuously."""
    values = {}
    for step in loaded.assertions:
        if isinstance(step.assertion, SecretLeakAssertion):
            for name in step.assertion.names:
                if not environ.get(name):
                    raise ConfigError(
                        f"{loaded.path}:{step.ref.line}: assert_no_secret_leak names "
                        f"{name}, which is not set (or empty) in the environment; "
                        "an unset secret cannot be checked"
                    )
                values[name] = environ[name]
    return values


def judge(
    loaded: LoadedSpec,
    trajectory: Trajectory,
    bodies: Sequence[Body],
    environ: Mapping[str, str],
    secret_values: Mapping[str, str],
    egress: EgressEvidence | None = None,
) -> tuple[Verdict, ...]:
    """Every verdict of the flow, in spec order, with the flow-level strict verdict last.

    Each registered evaluator is called once, with its steps in spec order; also when it has
    none, because `strict: true` judges a flow that lists no assert_tool_call at all. A value
    that turns out unusable once `${VAR}` is resolved is a SpecError at the step's line."""
    strict = (
        SpecLine(str(loaded.path), loaded.line_of("strict") or 0) if loaded.spec.strict else None
    )
    evidence = Evidence(
        trajectory=trajectory,
        bodies=tuple(bodies),
        secrets=secret_values,
        resolve=lambda text: resolve(text, environ),
        strict=strict,
        egress=egress,
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

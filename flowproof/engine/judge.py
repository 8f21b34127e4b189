"""The assertion steps of a flow, judged against what crossed the boundary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flowproof.assertions.evaluate import StepRef, Verdict, evaluate
from flowproof.assertions.grammar import Assertion
from flowproof.assertions.secrets import Body, SecretLeakAssertion, check_secrets
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
) -> tuple[Verdict, ...]:
    trajectory_steps: list[tuple[StepRef, Assertion]] = []
    verdicts: list[Verdict] = []
    for step in loaded.assertions:
        if isinstance(step.assertion, SecretLeakAssertion):
            verdicts.append(check_secrets(step.ref, step.assertion, bodies, secret_values))
        else:
            trajectory_steps.append((step.ref, step.assertion))
    verdicts += evaluate(
        trajectory_steps,
        trajectory,
        strict=loaded.spec.strict,
        resolve=lambda text: resolve(text, environ),
    )
    # Report in spec order; the flow-level strict verdict (no step) goes last.
    return tuple(sorted(verdicts, key=lambda v: v.step.number if v.step else 1_000_000))

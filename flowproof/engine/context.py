"""What one flow knows about where it runs, derived once from the environment, the suite and
the spec, and handed to every part of the flow that needs it instead of the raw environment.

The environment is the snapshot taken when the flow was opened: the agent, the judge and the
record's secrets all see the same values, whatever changes in `os.environ` while it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from flowproof.engine.judge import declared_secrets
from flowproof.engine.workdir import agent_cwd
from flowproof.matching.rules import RequestRules
from flowproof.redaction import record_keys
from flowproof.spec.load import LoadedSpec
from flowproof.spec.suite import Suite


@dataclass(frozen=True, slots=True)
class FlowContext:
    loaded: LoadedSpec
    suite: Suite | None
    environ: Mapping[str, str]
    """The environment flowproof was given, read once."""
    rules: RequestRules
    """`normalize:` and `ignore_fields:`, the suite's then the spec's, with their facts."""
    secrets: Mapping[str, str]
    """The declared secrets (assert_no_secret_leak), by variable name."""
    record_keys: Mapping[str, str]
    """The record key variables that are set: never stored, never shown."""
    cwd: Path | None
    """The agent's working directory; None: flowproof's own."""

    @property
    def never_stored(self) -> dict[str, str]:
        return {**self.secrets, **self.record_keys}


def flow_context(
    loaded: LoadedSpec,
    suite: Suite | None,
    environ: Mapping[str, str],
    rules: RequestRules,
) -> FlowContext:
    """Raises a ConfigError for a declared secret that is not set, a SpecError for an
    `agent.cwd` that is not a directory."""
    return FlowContext(
        loaded=loaded,
        suite=suite,
        environ=environ,
        rules=rules,
        secrets=declared_secrets(loaded, environ),
        record_keys=record_keys(environ),
        cwd=agent_cwd(loaded, environ),
    )

"""What one flow knows about where it runs, derived once, when the flow is opened, from the
environment, the suite and the spec, and handed to every part of the flow that needs it
(the strategy, the agent driver, the judge, the record's guard) instead of the raw environment.

The environment is the snapshot taken when the flow was opened: the agent, the judge and the
record's secrets all see the same values, whatever changes in `os.environ` while it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flowproof.assertions.secrets import SecretLeakAssertion
from flowproof.core.errors import ConfigError
from flowproof.engine.workdir import agent_cwd
from flowproof.guards.capability import REDACTED_AS, Capability
from flowproof.guards.redaction import Redactor, proxy_credentials, record_keys
from flowproof.spec.load import LoadedSpec
from flowproof.spec.suite import Suite


@dataclass(frozen=True, slots=True)
class FlowContext:
    loaded: LoadedSpec
    suite: Suite | None
    environ: Mapping[str, str]
    """The environment flowproof was given, read once."""
    record_keys: Mapping[str, str]
    """The record key variables that are set: never stored, never shown."""
    cwd: Path | None
    """The agent's working directory; None: flowproof's own."""
    capability: Capability = field(default_factory=Capability)
    """What the agent must present at the proxy and the MCP HTTP stand-ins, minted for this
    flow alone; required unless the agent is a `url:` service started without it."""
    redactor: Redactor = field(default_factory=Redactor)
    """What hides the flow's never-shown values (its record keys and proxy credentials, its
    capability, and its declared secrets once the run has read them) from everything shown or
    written: the front door's own, so that what it prints and writes hides them too."""

    @property
    def secrets(self) -> dict[str, str]:
        """The declared secrets (assert_no_secret_leak), by variable name; a ConfigError for
        one that is not set. Checked when first read, not when the flow is opened: a flow
        that cannot start (its trace is missing) says so before it names an unset secret."""
        return declared_secrets(self.loaded, self.environ)

    @property
    def never_stored(self) -> dict[str, str]:
        return {**self.secrets, **self.record_keys, **proxy_credentials(self.environ)}


def flow_context(
    loaded: LoadedSpec,
    suite: Suite | None,
    environ: Mapping[str, str],
    redactor: Redactor | None = None,
) -> FlowContext:
    """`redactor`: the front door's, which the flow's never-shown values join (a redactor of
    the flow's own when None). Raises a SpecError for an `agent.cwd` that is not a
    directory."""
    redactor = Redactor() if redactor is None else redactor
    redactor.hide_record_keys(environ)
    capability = Capability(required=loaded.spec.agent.url is None)
    # An agent can echo its base URL into its output, which reports and records show.
    redactor.hide(REDACTED_AS, capability.token)
    return FlowContext(
        loaded=loaded,
        suite=suite,
        environ=environ,
        record_keys=record_keys(environ),
        cwd=agent_cwd(loaded, environ),
        capability=capability,
        redactor=redactor,
    )


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

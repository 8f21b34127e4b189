"""What one flow, and one command over many flows, came to."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from flowproof.assertions.evaluate import Verdict
from flowproof.assertions.trajectory import Trajectory
from flowproof.core.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_PASSED, FlowproofError, SpecError
from flowproof.drivers.base import DriverOutcome
from flowproof.matching.divergence import Divergence
from flowproof.runrecord.model import FlowRecord
from flowproof.trace.kinds import kind_named
from flowproof.trace.model import Lane, Trace

if TYPE_CHECKING:  # loaded by a flow that engages containment: most do not
    from flowproof.containment.findings import EgressSummary


class Mode(enum.StrEnum):
    RECORD = "record"
    REPLAY = "replay"


class Secrets(Mapping[str, str]):
    """Secret values by variable name, whose repr shows the names only: an outcome printed in
    a traceback or a debugger must not show what it hides."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = dict(values or {})

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Secrets({', '.join(self._values)})"


@dataclass(frozen=True, slots=True)
class FlowOutcome:
    spec_path: Path
    name: str
    mode: Mode
    reasons: tuple[str, ...]
    """Why the flow failed, most fundamental first; empty when it passed."""
    verdicts: tuple[Verdict, ...] = ()
    served: int = 0
    """Model turns served (replay) or recorded (record)."""
    recorded: int = 0
    """Model turns in the trace (replay only)."""
    trajectory: Trajectory | None = None
    divergence: Divergence | None = None
    agent: DriverOutcome | None = None
    """How the agent process (or the service trigger) ended; None when it never started."""
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """What the flow's record mentions without failing it (an upstream's refused attempts)."""
    trace_written: Path | None = None
    previous_trace: Trace | None = None
    """At record: the trace this record replaced, for `record --diff`."""
    lanes: tuple[Lane, ...] = ()
    """Every lane's entries served or recorded, in arrival order (the run record's timeline)."""
    kept_turns: tuple[int, ...] = ()
    """`record --keep-matching`: the model turns (0-based) served from the previous trace."""
    secrets: Secrets = field(default_factory=Secrets)
    """Declared secret values, so every report can redact them."""
    egress: EgressSummary | None = None
    """What egress containment enforced and saw; None when the flow engaged none."""
    normalized: tuple[str, ...] = ()
    """The `normalize:` entries the flow ran with (suite's, then its own)."""
    ignored_fields: tuple[str, ...] = ()
    """The `ignore_fields:` paths the flow matched without (suite's, then its own)."""
    outsiders: int = 0
    """Requests refused at the proxy or an MCP stand-in for not carrying the flow's
    capability: sent from outside the agent."""

    @property
    def passed(self) -> bool:
        return not self.reasons

    @property
    def mcp_calls(self) -> int:
        """Calls the agent made at its MCP servers (the tool boundary)."""
        return sum(_boundary_calls(lane) for lane in self.lanes)


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """A spec that could not be run at all: what went wrong, and where when it is known."""

    message: str
    spec: Path | None = None
    line: int | None = None

    @classmethod
    def from_error(cls, error: FlowproofError, spec: Path | None) -> ConfigProblem:
        if isinstance(error, SpecError):
            return cls(str(error), error.path, error.line)
        return cls(str(error), spec)


@dataclass(slots=True)
class Summary:
    """Every flow of one `run` or `record` as its run record holds it, plus the specs that
    could not be run at all: what the exit code of every front door is decided from."""

    flows: list[FlowRecord] = field(default_factory=list)
    errors: list[ConfigProblem] = field(default_factory=list)
    """Configuration errors (bad spec, unreadable trace, unset variable): exit 2."""

    @property
    def exit_code(self) -> int:
        """2 when any spec could not be run as configured, else 1 when any flow failed, else 0.

        A configuration error outranks a failed flow: it means part of the suite never ran,
        and a 1 would suggest every flow was at least tried.
        """
        if self.errors:
            return EXIT_CONFIG
        return EXIT_FAILED if any(flow.verdict != "pass" for flow in self.flows) else EXIT_PASSED


def _boundary_calls(lane: Lane) -> int:
    kind = kind_named(lane.kind)
    return 0 if kind is None else kind.boundary_calls(lane)

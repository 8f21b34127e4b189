"""What one flow, and one command over many flows, came to."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flowproof.assertions.evaluate import Verdict
from flowproof.assertions.trajectory import Trajectory
from flowproof.drivers.command import AgentOutcome
from flowproof.drivers.url import TriggerOutcome
from flowproof.matching.divergence import Divergence
from flowproof.trace.model import Trace, Turn


class Mode(enum.StrEnum):
    RECORD = "record"
    REPLAY = "replay"


@dataclass(frozen=True, slots=True)
class FlowOutcome:
    spec_path: Path
    name: str
    mode: Mode
    reasons: tuple[str, ...]
    """Why the flow failed, most fundamental first; empty when it passed."""
    verdicts: tuple[Verdict, ...] = ()
    served: int = 0
    """Turns served (replay) or recorded (record)."""
    recorded: int = 0
    """Turns in the trace (replay only)."""
    trajectory: Trajectory | None = None
    divergence: Divergence | None = None
    agent: AgentOutcome | TriggerOutcome | None = None
    warnings: tuple[str, ...] = ()
    trace_written: Path | None = None
    previous_trace: Trace | None = None
    """At record: the trace this record replaced, for `record --diff`."""
    turns: tuple[Turn, ...] = ()
    """The turns served or recorded, in arrival order (for the run record's timeline)."""
    secrets: Mapping[str, str] = field(default_factory=dict)
    """Declared secret values (name → value), so every report can redact them."""

    @property
    def passed(self) -> bool:
        return not self.reasons


@dataclass(slots=True)
class Summary:
    """Every flow of one `run` or `record`, plus the specs that could not be run at all."""

    flows: list[FlowOutcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Configuration errors (bad spec, unreadable trace, unset variable): exit 2."""

    @property
    def exit_code(self) -> int:
        """2 when any spec could not be run as configured, else 1 when any flow failed, else 0.

        A configuration error outranks a failed flow: it means part of the suite never ran,
        and a 1 would suggest every flow was at least tried.
        """
        if self.errors:
            return 2
        return 1 if any(not flow.passed for flow in self.flows) else 0

    def extend(self, outcomes: Sequence[FlowOutcome]) -> None:
        self.flows.extend(outcomes)

"""What every driver reports when the agent is done with: the part the engine reads alike.

A command agent (drivers/command.py) and a url: service (drivers/url.py) end differently, so each
has its own outcome, but both were bounded by the same timeout and the same early stop, and the
engine asks those questions without caring which driver ran.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverOutcome:
    """How driving the agent ended. Informational: the verdict comes from the traffic."""

    timed_out: bool
    """True when the agent was still busy at its timeout and flowproof stopped waiting."""
    stopped_early: bool
    """True when flowproof stopped it because the flow had already failed at the boundary."""
    seconds: float
    """Wall-clock time from start (or trigger) to the end of driving."""

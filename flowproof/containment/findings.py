"""What the supervisor saw while one agent ran: blocked destinations, local contacts, and the
destructive filesystem calls it observed. Filled from the supervisor's threads, read once the
agent's tree is gone."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from flowproof.containment.fsevents import FsEvent, RawFsEvent, describe

CONTAINED = "contained (linux seccomp)"
OBSERVED = "observed (linux seccomp)"
_LISTED = 50
"""Filesystem events listed one by one before the rest are counted."""


def not_contained(reason: str) -> str:
    """The tier of a run that nothing contained, with the reason in words."""
    return f"not contained ({reason})"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One refused attempt: `connect 203.0.113.7:8080`, `socket(AF_VSOCK)`."""

    call: str
    destination: str

    def __str__(self) -> str:
        return f"{self.call} {self.destination}"


@dataclass(slots=True)
class Findings:
    started: float = field(default_factory=time.monotonic)
    blocked: list[Attempt] = field(default_factory=list)
    """Every refused attempt, in order (repeats included)."""
    local: Counter[str] = field(default_factory=Counter)
    """Loopback and unix destinations performed: trusted wholesale, but counted."""
    fs_raw: list[RawFsEvent] = field(default_factory=list)
    """The filesystem observation's raw facts , appended by the
    receiver thread alone and worded only when asked for (`fs_events`)."""
    faults: list[str] = field(default_factory=list)
    """Notifications the supervisor could not handle (answered EPERM, never left hanging)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def block(self, call: str, destination: str) -> None:
        with self._lock:
            self.blocked.append(Attempt(call, destination))

    def touch_local(self, destination: str) -> None:
        with self._lock:
            self.local[destination] += 1

    def fs_events(self) -> list[FsEvent]:
        described = (describe(raw, self.started) for raw in list(self.fs_raw))
        return [event for event in described if event is not None]

    def fault(self, text: str) -> None:
        with self._lock:
            self.faults.append(text)

    def blocked_destinations(self) -> tuple[str, ...]:
        """Each distinct refused attempt once, in the order first seen."""
        with self._lock:
            return tuple(dict.fromkeys(str(attempt) for attempt in self.blocked))

    def fs_report(self) -> str:
        """The filesystem observation report; empty when the run destroyed nothing."""
        events = self.fs_events()
        if not events:
            return ""
        lines = [f"filesystem observation: {OBSERVED}; {len(events)} destructive syscall(s)"]
        lines += [f"  {event}" for event in events[:_LISTED]]
        if len(events) > _LISTED:
            lines.append(f"  ... and {len(events) - _LISTED} more")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class EgressSummary:
    """What a flow's containment came to, for the printed summary and the run record."""

    tier: str
    contained: bool
    blocked: tuple[str, ...]
    """Each distinct refused attempt; empty unless THIS run was contained."""
    fs_report: str = ""
    """The filesystem observation report (printed, never recorded); empty when nothing was
    destroyed or nothing observed."""
    faults: tuple[str, ...] = ()

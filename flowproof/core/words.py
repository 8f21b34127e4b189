"""How flowproof words a count for people: one spelling of "1 turn" / "2 turns" for the
terminal, the reports and the diagnostics alike."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """`count` and `noun`, the noun with an `s` unless there is exactly one: `1 turn`, `0 turns`."""
    return f"{count} {noun}{'s' * (count != 1)}"

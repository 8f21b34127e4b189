"""The one rule every registry-by-subclassing follows (matchers, step kinds, dialects, lanes).

A name claimed twice is a TypeError when the second class is defined, naming both classes
(respx `Pattern`), so a clash cannot wait for some spec or request to trip on it.
"""

from __future__ import annotations


def refuse_clash(what: str, name: str, existing: type | None, newcomer: type) -> None:
    """Raise when `name` is already registered (by `existing`) as a `what`."""
    if existing is not None:
        raise TypeError(
            f"{what} '{name}' is declared by both {existing.__name__} and {newcomer.__name__}"
        )

"""assert_no_secret_leak: declared secret VALUES must not appear in the model traffic.

The step names environment variables, never values; the values are read at execution and
looked for in every recorded or served request and response body, in every spelling an agent
sends without meaning to change it (JSON-escaped inside a tool result, percent-encoded,
base64: flowproof/guards/spellings.py). A report names the variable and where its value appeared,
never the value itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowproof.assertions.evaluate import StepRef, Verdict, step_verdict
from flowproof.assertions.paths import format_indexed, walk
from flowproof.core.errors import SecretStepError
from flowproof.core.words import plural
from flowproof.guards.spellings import appears

KIND = "assert_no_secret_leak"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHOWN_PLACES = 3


@dataclass(frozen=True, slots=True)
class SecretLeakAssertion:
    names: tuple[str, ...]

    @property
    def kind(self) -> str:
        return KIND

    def __str__(self) -> str:
        return f"{KIND} {' '.join(self.names)}"


def parse_secret_step(text: str) -> SecretLeakAssertion:
    names = tuple(text.replace(",", " ").split())
    bad = [name for name in names if not _NAME.match(name)]
    if not names or bad:
        shown = f"'{bad[0]}' is not" if bad else "nothing was given as"
        raise SecretStepError(
            f"{shown} an environment variable name; write "
            f"`{KIND}: NAME [NAME...]` with the variables that hold secrets"
        )
    return SecretLeakAssertion(names)


@dataclass(frozen=True, slots=True)
class Body:
    """One body to scan, with a label for messages: `turn 2 request`."""

    label: str
    value: Any


def check_secrets(
    ref: StepRef, assertion: SecretLeakAssertion, bodies: Sequence[Body], secrets: Mapping[str, str]
) -> Verdict:
    """`secrets` maps each declared name to its value (the engine refuses unset names)."""
    leaks = []
    for name in assertion.names:
        places = [
            f"{body.label} at {path}"
            for body in bodies
            for path in _places(body.value, secrets[name])
        ]
        if places:
            shown = ", ".join(places[:_SHOWN_PLACES])
            more = len(places) - _SHOWN_PLACES
            leaks.append(
                f"the value of {name} appeared in {shown}"
                + (f" and {plural(more, 'more place')}" if more > 0 else "")
            )
    return step_verdict(ref, KIND, str(assertion), "; ".join(leaks) if leaks else None)


def _places(value: Any, secret: str) -> Iterator[str]:
    """Where `secret` appears in a body: `a.b[0]`, or `a.b (a key)` for a key of the dict at
    `a.b`; `(body)` is the body itself."""
    for path, node in walk(value):
        if path and isinstance(path[-1], str) and appears(secret, path[-1]):
            yield f"{format_indexed(path[:-1]) or '(body)'} (a key)"
        if isinstance(node, str) and appears(secret, node):
            yield format_indexed(path) or "(body)"

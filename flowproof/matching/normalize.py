"""Environment-relative bodies (`normalize:`): today's facts out, placeholders in, and back.

An agent that writes its working directory or today's date into its prompt sends a different
body in every checkout and on every day. A flow that declares those facts has each occurrence
of their CURRENT value in a request body replaced by a placeholder (`{{flowproof.cwd}}`) before
the request is matched or stored, and every placeholder in a response it is served replaced by
the current value again, so a recorded tool call on an absolute path acts on today's checkout.

The facts (FACTS) and `${VAR}` values are measured once per flow, by the engine
(engine/environment.py); this module only substitutes. Values are replaced longest first, in
one pass over each string, so a short value never matches inside a longer one or inside a
placeholder already written. A value shorter than MIN_LENGTH characters is refused: `bob` or
`/tm` would rewrite unrelated text in every body.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

MIN_LENGTH = 4
"""The shortest value flowproof replaces."""

FACTS: Mapping[str, str] = {
    "cwd": "the agent's working directory (`agent.cwd`, else where flowproof was started)",
    "home": "the agent's home directory ($HOME)",
    "tmpdir": "the temporary directory ($TMPDIR, else /tmp)",
    "user": "the user name ($USER, else $LOGNAME, else the login name)",
    "hostname": "the machine's host name",
    "date": "today, in UTC and in local time, spelled 2026-12-01, Tue Dec 01 2026, "
    "December 1, 2026 and Tuesday",
}
"""The environment facts a `normalize:` entry may name, with what each stands for."""

_VARIABLE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def checked_entry(text: Any) -> str:
    """A `normalize:` entry, validated (the spec model's validator): a fact or `${VAR}`."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            f"an entry is empty; name a fact ({', '.join(FACTS)}) or a variable (`${{VAR}}`)"
        )
    if text in FACTS or _VARIABLE.match(text):
        return text
    if text.startswith("${"):
        raise ValueError(
            f"'{text}' is not a `${{VAR}}` reference to an environment variable "
            "(letters, digits and `_`; `${flowproof.*}` handles are not facts)"
        )
    close = difflib.get_close_matches(text, list(FACTS), n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"facts: {', '.join(FACTS)}"
    raise ValueError(f"unknown fact '{text}'; {hint} (or `${{VAR}}` for a variable's value)")


def variable_of(entry: str) -> str | None:
    """`PROJECT` for the entry `${PROJECT}`; None for a fact."""
    found = _VARIABLE.match(entry)
    return found.group(1) if found else None


def placeholder(name: str) -> str:
    return "{{flowproof." + name + "}}"


@dataclass(frozen=True, slots=True)
class Environment:
    """The facts as they are for one flow, measured by the engine."""

    cwd: Sequence[str]
    """The agent's working directory: the path it runs in first (what it restores to), then
    the same directory as other spellings reach it (the resolved path of a symlink)."""
    home: Sequence[str]
    tmpdir: Sequence[str]
    user: str
    hostname: str
    utc: date
    local: date
    """Today where flowproof runs (its TZ, which the agent inherits)."""
    variables: Mapping[str, str] = field(default_factory=dict)
    """The environment `${VAR}` entries are read from."""


@dataclass(frozen=True, slots=True)
class Substitution:
    """One placeholder, the current values that become it, and the value it becomes."""

    placeholder: str
    values: tuple[str, ...]
    restored: str


class ShortValue(ValueError):
    """A declared fact whose value here is too short (or empty) to replace safely."""

    def __init__(self, entry: str, value: str) -> None:
        self.entry = entry
        self.value = value
        secret = variable_of(entry) is not None  # a variable's value is not shown
        shown = f"{len(value)} characters" if secret else f"{value!r}, {len(value)} characters"
        what = "is empty here" if not value else f"is {shown} here"
        super().__init__(
            f"normalize: {entry} {what}; values shorter than {MIN_LENGTH} characters are "
            "refused, since replacing them would rewrite unrelated text in every body"
        )


class UnsetVariable(ValueError):
    def __init__(self, entry: str) -> None:
        self.entry = entry
        super().__init__(f"normalize: {entry} is not set in the environment")


def substitutions(entry: str, env: Environment) -> list[Substitution]:
    """What one declared entry replaces, given the facts (ShortValue, UnsetVariable)."""
    name = variable_of(entry)
    if name is not None:
        if name not in env.variables:
            raise UnsetVariable(entry)
        found: list[tuple[str, tuple[str, ...]]] = [(f"env.{name}", (env.variables[name],))]
    elif entry == "date":
        found = [(key, (spell(env.local), spell(env.utc))) for key, spell in _DATE_SPELLINGS]
    else:
        spellings = {
            "cwd": env.cwd,
            "home": env.home,
            "tmpdir": env.tmpdir,
            "user": (env.user,),
            "hostname": (env.hostname,),
        }[entry]
        found = [(entry, tuple(spellings))]
    subs = []
    for key, values in found:
        unique = tuple(dict.fromkeys(values))  # the first spelling is what comes back
        for value in unique or ("",):
            if len(value) < MIN_LENGTH:
                raise ShortValue(entry, value)
        subs.append(Substitution(placeholder(key), unique, unique[0]))
    return subs


def _iso(day: date) -> str:
    return day.isoformat()


def _text(day: date) -> str:
    """JavaScript's Date.toDateString(): `Tue Dec 01 2026`."""
    return f"{_DAYS[day.weekday()][:3]} {_MONTHS[day.month - 1][:3]} {day.day:02d} {day.year}"


def _long(day: date) -> str:
    return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"


def _weekday(day: date) -> str:
    return _DAYS[day.weekday()]


_DATE_SPELLINGS = (
    ("date", _iso),
    ("date.text", _text),
    ("date.long", _long),
    ("weekday", _weekday),
)
"""Each spelling of today keeps its own placeholder, so it comes back spelled the same. The
local spelling is what a placeholder becomes; the UTC one, when it differs, is replaced too."""


@dataclass(frozen=True, slots=True)
class Normalizer:
    """The declared entries of one flow, with today's values."""

    entries: tuple[str, ...] = ()
    """As declared (`cwd`, `date`, `${PROJECT}`), in the order reports list them."""
    substitutions: tuple[Substitution, ...] = ()

    @classmethod
    def build(cls, entries: Sequence[str], env: Environment) -> Normalizer:
        subs = [sub for entry in entries for sub in substitutions(entry, env)]
        return cls(tuple(entries), tuple(subs))

    def to_placeholders(self, body: Any) -> Any:
        """`body` with each current value replaced by its placeholder (longest value first)."""
        table = {value: sub.placeholder for sub in self.substitutions for value in sub.values}
        return _rewrite(body, table)

    def from_placeholders(self, body: Any) -> Any:
        """`body` with each placeholder replaced by its current value."""
        return _rewrite(body, {sub.placeholder: sub.restored for sub in self.substitutions})


NO_NORMALIZER = Normalizer()


def _rewrite(body: Any, table: Mapping[str, str]) -> Any:
    if not table:
        return body
    # Longest first: at any position the longest value wins, and one pass never rescans what
    # it wrote (a placeholder, a restored path).
    pattern = re.compile("|".join(map(re.escape, sorted(table, key=len, reverse=True))))

    def text(value: str) -> str:
        return pattern.sub(lambda found: table[found.group(0)], value)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {text(key): walk(item) for key, item in value.items()}
        return value

    return walk(body)

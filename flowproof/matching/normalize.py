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

The working directory, the home directory and the temporary directory are normalised by default
(DEFAULT_FACTS), unless a flow opts one out (`no-cwd`). A default fact is replaced in every
spelling flowproof can derive (as given, resolved, under `~`, and the slug agents name
per-project state with, `/work/app` as `work-app`), and only where it stands on its own: a path
not inside a longer word or path (`/tmp` is not replaced in `/var/tmp`), a slug not inside a
longer word. A default spelling too short to replace safely is skipped without a word, since
nobody asked for it. A declared entry keeps its exact rule, so a trace recorded before the
defaults (which does not list them, trace/model.py) is matched as it always was.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
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

DEFAULT_FACTS = ("cwd", "home", "tmpdir")
"""Facts normalised without being declared: where an agent runs differs on every machine."""
OPT_OUT = "no-"
"""`no-cwd` in a `normalize:` list keeps that default fact as it is."""
SLUG_SEGMENTS = 2
"""A slug is replaced only for a path of at least this many segments: `/work/app` gives
`work-app`, but `/root` would give the everyday word `root`."""

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
    if text.startswith(OPT_OUT):
        return _checked_opt_out(text)
    if text.startswith("${"):
        raise ValueError(
            f"'{text}' is not a `${{VAR}}` reference to an environment variable "
            "(letters, digits and `_`; `${flowproof.*}` handles are not facts)"
        )
    close = difflib.get_close_matches(text, list(FACTS), n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"facts: {', '.join(FACTS)}"
    raise ValueError(f"unknown fact '{text}'; {hint} (or `${{VAR}}` for a variable's value)")


def _checked_opt_out(text: str) -> str:
    fact = text.removeprefix(OPT_OUT)
    if fact in DEFAULT_FACTS:
        return text
    if fact in FACTS:
        raise ValueError(
            f"'{fact}' is not normalised by default, so there is nothing to opt out of"
        )
    close = difflib.get_close_matches(fact, list(DEFAULT_FACTS), n=1)
    hint = (
        f"did you mean '{OPT_OUT}{close[0]}'?"
        if close
        else "opt-outs: " + ", ".join(OPT_OUT + name for name in DEFAULT_FACTS)
    )
    raise ValueError(f"unknown default fact '{fact}' in '{text}'; {hint}")


def opted_out(entry: str) -> str | None:
    """`cwd` for the entry `no-cwd`; None for any other entry."""
    return entry.removeprefix(OPT_OUT) if entry.startswith(OPT_OUT) else None


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
    alone: tuple[str, str] = ("", "")
    """The characters that may not come just before and just after a value for it to be
    replaced (regex class bodies); empty: replaced wherever it occurs, as a declared entry
    always was."""


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


_ALONE_PATH = ("A-Za-z0-9_.~-", "A-Za-z0-9_-")
"""A path stands alone unless it continues a word or path before it (`/var/tmp`) or goes on
into a longer name after it (`/tmpfiles`); a full stop after it ends a sentence."""
_ALONE_SLUG = ("A-Za-z0-9", "A-Za-z0-9")


def default_substitutions(fact: str, env: Environment) -> list[Substitution]:
    """What a default fact replaces: each long-enough spelling of the directory, then its slug;
    a spelling too short to replace safely is left out, never refused."""
    directories = {"cwd": env.cwd, "home": env.home, "tmpdir": env.tmpdir}[fact]
    paths = _long_enough((*directories, *_under_home(directories, env.home)))
    slugs = _long_enough(slug(path) for path in directories if _segments(path) >= SLUG_SEGMENTS)
    subs = []
    if paths:
        subs.append(Substitution(placeholder(fact), paths, paths[0], _ALONE_PATH))
    if slugs:
        subs.append(Substitution(placeholder(f"{fact}.slug"), slugs, slugs[0], _ALONE_SLUG))
    return subs


def slug(path: str) -> str:
    """The name agents give a directory's own state: every character other than a letter or
    digit as `-`, the leading one dropped (`/work/app` → `work-app`). The form with the
    leading `-` is `-` and this, so replacing this covers both."""
    return re.sub(r"[^A-Za-z0-9]", "-", path).lstrip("-")


def _segments(path: str) -> int:
    return len([part for part in re.split(r"[/\\]", path) if part])


def _under_home(directories: Sequence[str], home: Sequence[str]) -> list[str]:
    """The `~` spelling of each directory inside the home directory (not of home itself)."""
    tilde = []
    for directory in directories:
        for root in _long_enough(home):
            if directory.startswith(root + "/"):
                tilde.append("~" + directory[len(root) :])
    return tilde


def _long_enough(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(value for value in values if len(value) >= MIN_LENGTH))


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
    defaults: tuple[str, ...] = ()
    """The default facts in force (DEFAULT_FACTS less those opted out, or those the trace
    being replayed was recorded with): what a trace recorded with this normaliser lists."""
    applied: tuple[str, ...] = ()
    """The defaults with a value long enough to replace here."""

    @classmethod
    def build(
        cls, entries: Sequence[str], env: Environment, defaults: Sequence[str] = ()
    ) -> Normalizer:
        """`entries`: the declared facts and variables (no opt-outs); a fact also in
        `defaults` is replaced by the default rule."""
        by_default = {fact: default_substitutions(fact, env) for fact in defaults}
        subs = [sub for found in by_default.values() for sub in found]
        subs += [
            sub for entry in entries if entry not in defaults for sub in substitutions(entry, env)
        ]
        applied = tuple(fact for fact, found in by_default.items() if found)
        return cls(tuple(entries), tuple(subs), tuple(defaults), applied)

    @property
    def normalized(self) -> tuple[str, ...]:
        """Every fact normalised here: the declared entries, then the defaults not declared."""
        return (*self.entries, *(fact for fact in self.applied if fact not in self.entries))

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every current value a request may hold that `to_placeholders` would replace: a body
        whose text holds none of them is left as it is (the fast path, matching/exact.py)."""
        return tuple(value for sub in self.substitutions for value in sub.values)

    def to_placeholders(self, body: Any) -> Any:
        """`body` with each current value replaced by its placeholder (longest value first)."""
        table = {
            value: _Target(sub.placeholder, sub.alone)
            for sub in self.substitutions
            for value in sub.values
        }
        return _rewrite(body, table)

    def from_placeholders(self, body: Any) -> Any:
        """`body` with each placeholder replaced by its current value."""
        return _rewrite(
            body, {sub.placeholder: _Target(sub.restored) for sub in self.substitutions}
        )


NO_NORMALIZER = Normalizer()


@dataclass(frozen=True, slots=True)
class _Target:
    """What a found value becomes, and the characters that may not touch it (see Substitution)."""

    text: str
    alone: tuple[str, str] = ("", "")


def _alternative(value: str, alone: tuple[str, str]) -> str:
    before, after = alone
    guard_before = f"(?<![{before}])" if before else ""
    guard_after = f"(?![{after}])" if after else ""
    return f"{guard_before}{re.escape(value)}{guard_after}"


def _rewrite(body: Any, table: Mapping[str, _Target]) -> Any:
    if not table:
        return body
    # Longest first: at any position the longest value wins, and one pass never rescans what
    # it wrote (a placeholder, a restored path).
    ordered = sorted(table, key=len, reverse=True)
    pattern = re.compile("|".join(_alternative(value, table[value].alone) for value in ordered))

    def text(value: str) -> str:
        return pattern.sub(lambda found: table[found.group(0)].text, value)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {text(key): walk(item) for key, item in value.items()}
        return value

    return walk(body)

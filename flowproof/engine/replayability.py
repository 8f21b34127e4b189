"""What in an agent's requests would stop a trace from replaying elsewhere or on another day.

`flowproof doctor` runs the agent once and hands the request bodies here. Pure: the facts of
this machine (working directory, home, today's date) come in as values, and what comes out
is a list of findings, each with the spec line that declares it (`normalize:` for an
environment fact, `ignore_fields:` for a per-run identifier), or the reason none can.

A per-run identifier is a value that looks generated for this run: a UUID (alone or inside a
string such as `user_..._session_<uuid>`), or a number that reads as a timestamp within a day
of now. One run cannot prove a value changes between runs; these are the shapes that do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from flowproof.core.words import plural
from flowproof.matching.fields import CONVERSATION_KEYS, ITEM_IDENTITY_PATH
from flowproof.matching.remedy import TOOL_RESULT, undeclarable_id

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
DAY_SECONDS = 86_400
ZONE = (
    "no normalize: fact covers a time zone: record and replay on machines set to the same zone "
    '(an agent that prints $TZ can be declared as normalize: ["${TZ}"])'
)
SHOWN_PER_FINDING = 3


@dataclass(frozen=True, slots=True)
class Fact:
    """One environment fact `normalize:` can replace by a placeholder."""

    key: str
    """Its `normalize:` name: `cwd`, `home`, `date`."""
    label: str
    """How a report names it: "the working directory"."""
    spellings: tuple[str, ...]
    """The values to look for, longest first."""
    word: bool = False
    """Match only as a whole word (a weekday inside another word is not a date)."""
    why_not: str | None = None
    """Set for a fact no `normalize:` entry covers: why, and what to do instead."""
    by_default: bool = False
    """Normalised without being declared (the working and home directories, in every spelling
    matching/normalize.py derives): looked for, so that what it covers is not reported as
    something else, but never a finding."""


@dataclass(frozen=True, slots=True)
class Sighting:
    request: int
    """Which model request, from 1, among those doctor saw."""
    path: str
    """Where in the body: `system[2].text`, `metadata.user_id`."""
    value: str
    """What was seen there (the spelling, or the identifier)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason a trace would not replay, with the declaration that answers it."""

    label: str
    """"the working directory /work/app", "today's date", "a per-run id at metadata.user_id"."""
    sightings: tuple[Sighting, ...]
    normalize: str | None = None
    """The `normalize:` entry that answers it."""
    ignore_field: str | None = None
    """The `ignore_fields:` path that answers it."""
    why_not: str | None = None
    """Why neither can: the value sits inside conversation content."""

    def render(self) -> list[str]:
        first, *rest = self.sightings
        more = f" (and {plural(len(rest), 'more place')})" if rest else ""
        lines = [f"  {self.label}: request {first.request} at {first.path} = {first.value!r}{more}"]
        if self.normalize:
            lines.append(f"      → normalize: [{_yaml_scalar(self.normalize)}]")
        elif self.ignore_field:
            lines.append(f"      → ignore_fields: [{_yaml_scalar(self.ignore_field)}]")
        elif self.why_not:
            lines.append(f"      ✗ {self.why_not}")
        return lines


def environment_facts(
    cwd: str, home: str, now: datetime, zone: str = "", variables: Mapping[str, str] | None = None
) -> tuple[Fact, ...]:
    """The facts doctor looks for. `now` is aware, in the agent's local time zone; the date is
    checked in that zone and in UTC. `zone`: this machine's time zone name (`Etc/UTC`), which
    no `normalize:` fact covers. `variables`: environment variables whose values an agent may
    print (`TZ`), each declared as `normalize: ["${NAME}"]`.

    The working and home directories are normalised by default, slugs included (agents name
    per-project state as `~/.<agent>/projects/-work-app/`), so they are looked for but never
    reported: a trace replays wherever they differ."""
    days = {now.date(), now.astimezone(UTC).date()}
    spellings: list[str] = []
    weekdays: list[str] = []
    for day in sorted(days):
        spellings += [
            day.isoformat(),  # 2026-12-01
            day.strftime("%a %b %d %Y"),  # Tue Dec 01 2026
            f"{day.strftime('%B')} {day.day}, {day.year}",  # December 1, 2026
            day.strftime("%d/%m/%Y"),
            day.strftime("%m/%d/%Y"),
        ]
        weekdays.append(day.strftime("%A"))  # Tuesday
    # normalize: refuses a value under 4 characters (it would replace too much); so does this.
    slug = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    facts: list[Fact] = []
    if len(cwd) >= 4:
        paths = _longest_first([cwd, slug, slug.lstrip("-")])
        facts.append(Fact("cwd", f"the working directory {cwd}", paths, by_default=True))
    if len(home) >= 4 and home != cwd:
        facts.append(Fact("home", f"the home directory {home}", (home,), by_default=True))
    facts.append(Fact("date", "today's date", _longest_first(spellings)))
    facts.append(Fact("date", "today's weekday", _longest_first(weekdays), word=True))
    for name, value in (variables or {}).items():
        if len(value) >= 4 and value != zone:
            facts.append(Fact(f"${{{name}}}", f"${name} ({value})", (value,), word=True))
    if len(zone) >= 4:
        facts.append(Fact("", f"this machine's time zone {zone}", (zone,), word=True, why_not=ZONE))
    return tuple(facts)


def find_hazards(
    bodies: Sequence[Any], facts: Sequence[Fact], now: datetime
) -> tuple[Finding, ...]:
    """Every environment fact and per-run identifier seen in `bodies`, in that order.

    Longer facts are searched first and blanked out, so a home directory that is a prefix of
    the working directory is reported only where it appears on its own.
    """
    leaves = [
        (number, path, value)
        for number, body in enumerate(bodies, 1)
        for path, value in _leaves(body, "")
    ]
    texts = {(number, path): value for number, path, value in leaves if isinstance(value, str)}
    masked = dict(texts)
    seen: dict[int, list[Sighting]] = {}
    by_length = sorted(range(len(facts)), key=lambda i: -max(map(len, facts[i].spellings)))
    for index in by_length:
        fact = facts[index]
        for (number, path), text in masked.items():
            for spelling in fact.spellings:
                pattern = re.escape(spelling)
                if fact.word:
                    pattern = rf"\b{pattern}\b"
                if re.search(pattern, text):
                    seen.setdefault(index, []).append(Sighting(number, path, spelling))
                    masked[(number, path)] = text = re.sub(pattern, "", text)
    findings = [
        Finding(fact.label, tuple(seen[index]), normalize=fact.key or None, why_not=fact.why_not)
        for index, fact in enumerate(facts)
        if index in seen and not fact.by_default
    ]
    findings += _per_run_ids(leaves, now)
    return _merge_dates(findings)


def suggested_lines(findings: Sequence[Finding]) -> list[str]:
    """The spec lines that declare every finding that can be declared."""
    normalize = _unique(f.normalize for f in findings if f.normalize)
    ignore = _unique(f.ignore_field for f in findings if f.ignore_field)
    lines = []
    if normalize:
        lines.append(f"normalize: [{', '.join(map(_yaml_scalar, normalize))}]")
    if ignore:
        lines.append(f"ignore_fields: [{', '.join(map(_yaml_scalar, ignore))}]")
    return lines


def _per_run_ids(leaves: Sequence[tuple[int, str, Any]], now: datetime) -> list[Finding]:
    by_path: dict[str, list[Sighting]] = {}
    for number, path, value in leaves:
        shown = _volatile(value, now)
        if shown is not None:
            general = _generalise(path)
            identity = ITEM_IDENTITY_PATH.match(general)
            # An item's identity field is declared whole, however many values lie below it.
            key = identity.group(0) if identity else general
            by_path.setdefault(key, []).append(Sighting(number, path, shown))
    # Several volatile fields under one object outside the conversation (Codex's
    # client_metadata) are declared as that one object.
    tops: dict[str, list[str]] = {}
    for path in by_path:
        tops.setdefault(_top(path), []).append(path)
    findings: list[Finding] = []
    done: set[str] = set()
    for path, sightings in by_path.items():
        top = _top(path)
        if path in done:
            continue
        if top not in CONVERSATION_KEYS and len(tops[top]) > 1 and top != path:
            group = [s for p in tops[top] for s in by_path[p]]
            done.update(tops[top])
            findings.append(Finding(f"per-run ids under {top}", tuple(group), ignore_field=top))
            continue
        done.add(path)
        label = f"a per-run id at {path}"
        if top not in CONVERSATION_KEYS or ITEM_IDENTITY_PATH.fullmatch(path):
            findings.append(Finding(label, tuple(sightings), ignore_field=path))
        else:
            findings.append(
                Finding(
                    label,
                    tuple(sightings),
                    why_not=undeclarable_id(top),
                )
            )
    return findings


def _volatile(value: Any, now: datetime) -> str | None:
    if isinstance(value, str):
        match = UUID.search(value)
        return value if match and len(value) <= 80 else (match.group(0) if match else None)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    stamp = now.timestamp()
    for scale in (1, 1000):
        if abs(value / scale - stamp) < DAY_SECONDS:
            return str(value)
    return None


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _generalise(path: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", path)


def _top(path: str) -> str:
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _merge_dates(findings: list[Finding]) -> tuple[Finding, ...]:
    """Today's date and today's weekday are one `normalize: [date]`."""
    dates = [f for f in findings if f.normalize == "date"]
    if len(dates) < 2:
        return tuple(findings)
    merged = Finding("today's date", tuple(s for f in dates for s in f.sightings), normalize="date")
    rest = [f for f in findings if f.normalize != "date"]
    at = findings.index(dates[0])
    return tuple(rest[:at] + [merged] + rest[at:])


def _longest_first(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted(set(values), key=lambda v: (-len(v), v)))


def _yaml_scalar(path: str) -> str:
    """A path as a YAML flow-sequence item: `input[*].id` must be quoted (`[` and `*`)."""
    return json.dumps(path) if re.search(r"[\[\]*,:{}#&!|>'\"%@`$]", path) else path


def _unique(values: Iterator[str | None]) -> list[str]:
    seen: list[str] = []
    for value in values:
        if value and value not in seen:
            seen.append(value)
    return seen


# The block `flowproof doctor` and `record --verify` both end with.

DECLARE = "Declare them in the spec (docs/specs.md):"


def declare_lines(findings: Sequence[Finding], tools: Sequence[str] = ()) -> list[str]:
    """The "Declare them in the spec" block: the `normalize:`/`ignore_fields:` lines of
    `findings`, then a `tools:` entry with a `result:` for each tool in `tools` (a tool whose
    output differs between runs); empty when nothing can be declared."""
    lines = [f"  {line}" for line in suggested_lines(findings)]
    if tools:
        lines.append("  tools:")
        for tool in _unique(iter(tools)):
            lines += [f"    - name: {tool}", f"      result: {TOOL_RESULT}"]
    return [DECLARE, *lines] if lines else []

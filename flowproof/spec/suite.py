"""Suite settings: an optional `flowproof.yaml` beside (or above) a directory of specs.

    env:                 # applied to every flow, after flowproof's injection, before agent.env
      TOOLS_DB: "${flowproof.proxy_url}"
    before_each: ./scripts/reset-service   # run before each flow; a failure fails that flow
    normalize: [cwd, date]                 # added to each flow's own `normalize:`
    ignore_fields: [metadata.user_id]      # added to each flow's own `ignore_fields:`

The nearest `flowproof.yaml` walking up from a spec's directory wins, up to the directory
flowproof was started in; settings files are not merged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator

from flowproof.core.errors import ConfigError, SpecError
from flowproof.spec.load import Location, validated
from flowproof.spec.model import IgnoredFields, Normalized, _Strict
from flowproof.trace.store import trace_path_for

SUITE_FILE = "flowproof.yaml"


class LintPattern(_Strict):
    name: str = Field(min_length=1)
    """How a finding names it: `an internal ticket token`."""
    pattern: str = Field(min_length=1)
    """A Python regular expression, searched for in every string of every body."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"the pattern does not compile: {exc}") from None
        return pattern


class LintAllow(_Strict):
    trace: str = Field(min_length=1)
    """The trace file (a suffix of its path: `specs/booking.trace.json`)."""
    path: str = Field(min_length=1)
    """The JSON path the finding names."""
    rule: str = Field(min_length=1)
    """The rule the finding names, as printed."""
    reason: str = Field(min_length=1)
    """Why this is not a secret: the reviewer reads it."""


class TraceLintSpec(_Strict):
    patterns: list[LintPattern] = []
    allow: list[LintAllow] = []


class SuiteSpec(_Strict):
    env: dict[str, str] = {}
    """Environment for every flow's agent; `${VAR}` and `${flowproof.*}` resolve at spawn."""
    before_each: str | None = Field(default=None, min_length=1)
    """Shell command run before each flow (e.g. to reset a service); non-zero fails the flow."""
    trace_lint: TraceLintSpec = TraceLintSpec()
    """Extra patterns for `flowproof trace lint` (and record's scan), and reviewed exceptions."""
    normalize: Normalized = []
    """Environment facts normalised in every flow's request bodies (as a flow's `normalize:`)."""
    ignore_fields: IgnoredFields = []
    """Request-body paths every flow leaves out of matching (as a flow's `ignore_fields:`)."""


@dataclass(frozen=True, slots=True)
class Suite:
    path: Path
    settings: SuiteSpec
    lines: Mapping[Location, int] = field(default_factory=dict, repr=False)
    """The line of every key and list item (for errors found only at run time)."""

    def line_of(self, *location: str | int) -> int | None:
        return self.lines.get(location)


def find_suite(spec_path: Path, top: Path) -> Suite | None:
    """The nearest suite file above `spec_path`, not searching above `top`."""
    directory = spec_path.resolve().parent
    top = top.resolve()
    while True:
        candidate = directory / SUITE_FILE
        if candidate.is_file():
            return load_suite(candidate)
        if directory == top or top not in directory.parents:
            return None
        directory = directory.parent


def load_suite(path: Path) -> Suite:
    settings, lines = validated(path, SuiteSpec)
    return Suite(path, settings, lines)


SPEC_SUFFIXES = (".yaml", ".yml")


def is_spec_file(path: Path) -> bool:
    """A spec by its name: YAML, and not the suite settings file."""
    return path.suffix in SPEC_SUFFIXES and path.name != SUITE_FILE


def refuse_shared_trace(spec: Path) -> None:
    """Refuse a spec whose trace another spec beside it would record into too: `booking.yaml`
    and `booking.yml`, or names that differ only in case (one file on macOS and Windows).
    Each recording would overwrite the other's evidence, and replay would judge one flow by
    the other's recording, so neither runs until one is renamed."""
    trace = trace_path_for(spec)
    try:
        stamp = spec.parent.stat().st_mtime_ns
    except OSError:
        return  # an unreadable directory is reported when the spec itself is read
    for other in _specs_by_trace(spec.parent, stamp).get(trace.name.casefold(), ()):
        if other.name != spec.name and other.is_file():
            raise SpecError(
                spec,
                None,
                f"{other} would record into the same trace, {trace}",
                "rename one of the two specs (a trace is named after its spec)",
            )


@lru_cache(maxsize=64)
def _specs_by_trace(directory: Path, stamp: int) -> dict[str, tuple[Path, ...]]:
    """The spec files in `directory`, by the case-folded name of the trace each records into.
    Listed once per directory and per `stamp` (its modification time, which adding, removing
    or renaming a file changes), not once per flow: a suite's directory of N specs would
    otherwise be listed N times."""
    try:
        siblings = sorted(directory.iterdir())
    except OSError:
        return {}
    found: dict[str, list[Path]] = {}
    for other in siblings:
        if is_spec_file(other):
            found.setdefault(trace_path_for(other).name.casefold(), []).append(other)
    return {name: tuple(paths) for name, paths in found.items()}


def find_specs(paths: Iterable[str]) -> list[Path]:
    """Spec files under each path: a file as given, a directory searched recursively for
    *.yaml / *.yml except the suite settings file."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if is_spec_file(p) and p.is_file()))
        else:
            raise ConfigError(f"{raw}: no such file or directory")
    if not found:
        raise ConfigError(f"no specs (*.yaml, *.yml) found in {', '.join(map(str, paths))}")
    return found

"""The facts `normalize:` names, measured for one flow, and the flow's declared request rules.

A flow's lists are the suite's (`flowproof.yaml`) followed by its own. A fact is read from the
environment the agent will run in: its working directory (`agent.cwd`), and HOME, TMPDIR and
USER as the suite's `env:` and `agent.env` leave them. Today is taken in UTC and in
flowproof's local time zone (TZ), which the agent inherits.

The working directory, HOME and TMPDIR are normalised without being declared unless an entry
opts one out (`no-cwd`); a flow's own list decides over the suite's for the same fact. A replay
normalises by default only the facts its trace was recorded with (`normalized_by_default`), so
a trace from before the defaults is matched as it was recorded.

A declared fact whose value here is empty or shorter than 4 characters (a user `bob`, a `${VAR}`
set to `ab`) cannot be normalised safely. That is only known at run time, and it is reported as a
configuration error (exit 2) naming the file and line of the `normalize:` entry: the flow is not
run, since a replay that quietly matched on the raw value would pass here and fail elsewhere.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from flowproof.core.errors import SpecError
from flowproof.engine.workdir import agent_cwd
from flowproof.matching.fields import parse_field_path
from flowproof.matching.normalize import (
    DEFAULT_FACTS,
    MIN_LENGTH,
    OPT_OUT,
    Environment,
    Normalizer,
    ShortValue,
    UnsetVariable,
    opted_out,
    placeholder,
    substitutions,
)
from flowproof.matching.rules import RequestRules
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve
from flowproof.spec.suite import Suite

if TYPE_CHECKING:
    from flowproof.trace.lint import HomeFacts

Where = tuple[Path, int | None]


def request_rules(
    loaded: LoadedSpec,
    suite: Suite | None,
    environ: Mapping[str, str],
    now: datetime | None = None,
    recorded_defaults: Sequence[str] | None = None,
) -> RequestRules:
    """The flow's normaliser (today's values) and ignored fields; SpecError for a declared
    value too short to normalise, or an unset `${VAR}`. `recorded_defaults`: at replay, the
    facts the trace was normalised with by default (None at record)."""
    listed = _declared(loaded, suite, "normalize")
    ignored = _declared(loaded, suite, "ignore_fields")
    fields = tuple(parse_field_path(path) for path in ignored)
    off = _opted_out(loaded, suite)
    defaults = [
        fact
        for fact in DEFAULT_FACTS
        if fact not in off and (recorded_defaults is None or fact in recorded_defaults)
    ]
    entries = {
        entry: where
        for entry, where in listed.items()
        if opted_out(entry) is None and entry not in off
    }
    if not entries and not defaults:
        return RequestRules(ignored=fields)
    env = measure(loaded, suite, environ, now or datetime.now(UTC))
    for entry, (path, line) in entries.items():
        if entry in defaults:
            continue  # a default spelling too short to replace is skipped, never refused
        try:
            substitutions(entry, env)
        except ShortValue as exc:
            raise SpecError(path, line, str(exc), _SHORT_HINT) from None
        except UnsetVariable as exc:
            raise SpecError(path, line, str(exc), "set it, or drop the entry") from None
    return RequestRules(Normalizer.build(list(entries), env, defaults), fields)


def _opted_out(loaded: LoadedSpec, suite: Suite | None) -> dict[str, Where]:
    """The default facts the flow opts out of, with where: its own list decides over the
    suite's for a fact it names either way."""
    own = loaded.spec.normalize
    found: dict[str, Where] = {}
    for index, entry in enumerate(own):
        if (fact := opted_out(entry)) is not None:
            found[fact] = (loaded.path, loaded.line_of("normalize", index))
    if suite is not None:
        for index, entry in enumerate(suite.settings.normalize):
            fact = opted_out(entry)
            if fact is not None and fact not in own and fact not in found:
                found[fact] = (suite.path, suite.line_of("normalize", index))
    return found


def home_facts(
    loaded: LoadedSpec, suite: Suite | None, environ: Mapping[str, str], rules: RequestRules
) -> HomeFacts:
    """What this flow does with its home directory, for the trace lint's remedy."""
    from flowproof.trace.lint import HomeFacts  # record only: replay lints no trace

    env = measure(loaded, suite, environ, datetime.now(UTC))
    where = _opted_out(loaded, suite).get("home")
    home = placeholder("home")
    return HomeFacts(
        spellings=tuple(env.home),
        normalized=any(sub.placeholder == home for sub in rules.normalizer.substitutions),
        opt_out=_at(where, f"{OPT_OUT}home") if where else None,
    )


_SHORT_HINT = (
    f"drop the entry from normalize:, or run where its value has at least {MIN_LENGTH} characters"
)


def _declared(loaded: LoadedSpec, suite: Suite | None, key: str) -> dict[str, Where]:
    """The suite's entries then the flow's, each once, with where it is first written."""
    found: dict[str, Where] = {}
    if suite is not None:
        for index, entry in enumerate(getattr(suite.settings, key)):
            found.setdefault(entry, (suite.path, suite.line_of(key, index)))
    for index, entry in enumerate(getattr(loaded.spec, key)):
        found.setdefault(entry, (loaded.path, loaded.line_of(key, index)))
    return found


def measure(
    loaded: LoadedSpec, suite: Suite | None, environ: Mapping[str, str], now: datetime
) -> Environment:
    """Today's facts for this flow's agent."""
    cwd = agent_cwd(loaded, environ) or Path.cwd()
    overrides = {**(suite.settings.env if suite else {}), **loaded.spec.agent.env}
    seen = {**environ, **{name: resolve(value, environ) for name, value in overrides.items()}}
    return Environment(
        cwd=_spellings(str(cwd)),
        home=_spellings(seen.get("HOME", "")),
        tmpdir=_spellings(seen.get("TMPDIR") or "/tmp"),
        user=seen.get("USER") or seen.get("LOGNAME") or _login(),
        hostname=socket.gethostname(),
        utc=now.astimezone(UTC).date(),
        local=now.astimezone().date(),
        variables=dict(environ),
    )


def _spellings(directory: str) -> tuple[str, ...]:
    """A directory as the agent is most likely to print it (resolved, as getcwd() returns it),
    then as it was given; a trailing slash dropped."""
    if not directory:
        return ("",)
    given = directory.rstrip("/") or directory
    return tuple(dict.fromkeys((os.path.realpath(given), given)))


def _at(where: Where, entry: str) -> str:
    path, line = where
    return f"{path}:{line}: {entry}" if line else f"{path}: {entry}"


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""

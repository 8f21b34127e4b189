"""The facts `normalize:` names, measured for one flow, and the flow's declared request rules.

A flow's lists are the suite's (`flowproof.yaml`) followed by its own. A fact is read from the
environment the agent will run in: its working directory (`agent.cwd`), and HOME, TMPDIR and
USER as the suite's `env:` and `agent.env` leave them. Today is taken in UTC and in
flowproof's local time zone (TZ), which the agent inherits.

A fact whose value here is empty or shorter than 4 characters (a user `bob`, a `${VAR}` set to
`ab`) cannot be normalised safely. That is only known at run time, and it is reported as a
configuration error (exit 2) naming the file and line of the `normalize:` entry: the flow is not
run, since a replay that quietly matched on the raw value would pass here and fail elsewhere.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from flowproof.engine.workdir import agent_cwd
from flowproof.errors import SpecError
from flowproof.matching.fields import parse_field_path
from flowproof.matching.normalize import (
    MIN_LENGTH,
    Environment,
    Normalizer,
    ShortValue,
    UnsetVariable,
    substitutions,
)
from flowproof.matching.rules import RequestRules
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve
from flowproof.spec.suite import Suite

Where = tuple[Path, int | None]


def request_rules(
    loaded: LoadedSpec,
    suite: Suite | None,
    environ: Mapping[str, str],
    now: datetime | None = None,
) -> RequestRules:
    """The flow's normaliser (today's values) and ignored fields; SpecError for a value too
    short to normalise, or an unset `${VAR}`."""
    entries = _declared(loaded, suite, "normalize")
    ignored = _declared(loaded, suite, "ignore_fields")
    fields = tuple(parse_field_path(path) for path in ignored)
    if not entries:
        return RequestRules(ignored=fields)
    env = measure(loaded, suite, environ, now or datetime.now(UTC))
    for entry, (path, line) in entries.items():
        try:
            substitutions(entry, env)
        except ShortValue as exc:
            raise SpecError(path, line, str(exc), _SHORT_HINT) from None
        except UnsetVariable as exc:
            raise SpecError(path, line, str(exc), "set it, or drop the entry") from None
    return RequestRules(Normalizer.build(list(entries), env), fields)


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


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""

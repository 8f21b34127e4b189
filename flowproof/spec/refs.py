"""`${VAR}` and `${flowproof.*}` references: kept as written in specs, resolved only at execution.

A resolved value is never written anywhere by flowproof: traces store bodies only, and run
records store the spec text as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from flowproof.core.errors import ConfigError

_REF = re.compile(r"\$\{([^}]+)\}")
HANDLE_PREFIX = "flowproof."


def resolve(text: str, environ: Mapping[str, str], handles: Mapping[str, str] | None = None) -> str:
    """Replace `${VAR}` from `environ` and `${flowproof.x}` from `handles`.

    An unset variable is a configuration error (a silently empty value would turn a real
    argument into a blank one). An unknown `${flowproof.*}` handle is passed through untouched,
    so a spec written for a newer flowproof still starts its agent.
    """

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        if name.startswith(HANDLE_PREFIX):
            return (handles or {}).get(name[len(HANDLE_PREFIX) :], match.group(0))
        if name not in environ:
            raise ConfigError(f"${{{name}}} is used by the spec but is not set in the environment")
        return environ[name]

    return _REF.sub(substitute, text)

"""Every exception flowproof raises on purpose.

    FlowproofError                 base; the CLI maps any of these to exit 2
    ├── SpecError                  a spec (or suite file) is malformed: carries path, line, hint
    ├── TraceError                 a trace is unreadable or was written by a newer flowproof
    └── ConfigError                the environment is wrong for the run (an unset ${VAR}, ...)

Divergences, failed assertions and agents that crash are NOT exceptions: they are values in a
flow's outcome (engine/outcome.py), because they are the product, not a crash of flowproof.
An upstream model error at record is an outcome too (the flow fails, exit 1).
"""

from __future__ import annotations

from pathlib import Path


class FlowproofError(Exception):
    """A problem with flowproof's input, not with the agent under test (exit code 2)."""


class SpecError(FlowproofError):
    """A spec that cannot be run as written; the message points at the file and line."""

    def __init__(self, path: Path | str, line: int | None, message: str, hint: str = "") -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        self.hint = hint
        where = f"{self.path}:{line}" if line else f"{self.path}"
        text = f"{where}: {message}"
        if hint:
            text += f"; {hint}"
        super().__init__(text)


class TraceError(FlowproofError):
    """A trace file exists but cannot be used."""


class ConfigError(FlowproofError):
    """The environment or command line does not allow the run (exit code 2)."""

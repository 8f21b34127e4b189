"""What a command prints with --json when it ends in an error before it has a result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from flowproof.core.errors import SpecError, one_line
from flowproof.runrecord.base import RecordModel

if TYPE_CHECKING:
    pass

ErrorKind = Literal["usage", "config", "internal"]


class ErrorDetail(RecordModel):
    """Why the command stopped before it had a result."""

    kind: ErrorKind
    """`usage`: the command line (exit 2); `config`: a spec, trace, run record or setting
    flowproof cannot use (exit 2); `internal`: a bug in flowproof (exit 3)."""
    type: str
    """The error's class (`SpecError`, `ConfigError`, `UsageError`, ...)."""
    message: str
    """The whole error as printed on stderr, after `error: `."""
    file: str | None
    """The file at fault, when the error names one."""
    line: int | None
    """Its line, when known."""
    exit_code: int
    """The command's exit code (the same as without --json)."""
    traceback: str | None
    """An internal error: where its traceback was saved (None when it could not be)."""


class ErrorDocument(RecordModel):
    """What a flowproof command prints with --json when it ends in an error before it has a
    result of its own."""

    error: ErrorDetail


def error_document(
    kind: ErrorKind, error: Exception, exit_code: int, saved: Path | None = None
) -> dict[str, Any]:
    import click

    file, line = None, None
    if isinstance(error, SpecError):
        file, line = str(error.path), error.line
    if isinstance(error, click.ClickException):
        message = error.format_message()
    elif kind == "internal":
        message = one_line(error)
    else:
        message = str(error)
    detail = ErrorDetail(
        kind=kind,
        type=type(error).__name__,
        message=message,
        file=file,
        line=line,
        exit_code=exit_code,
        traceback=str(saved) if saved else None,
    )
    return ErrorDocument(error=detail).model_dump(mode="json")

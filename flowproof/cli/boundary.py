"""The CLI's one error boundary: what an exception that reaches the command line becomes.

    FlowproofError        bad input: `error: <message>` on stderr, exit 2
    click's own errors    usage: click prints them, exit 2
    anything else         a bug in flowproof: ONE line on stderr, exit 3, and the traceback
                          saved beside the run record (printed too with FLOWPROOF_DEBUG=1)

Before any of that, the package index's other `flowproof` installed in the same environment
stops the command with exit 2 (flowproof/host/distribution.py).

Under `--json` each of these also writes the command's one JSON document on stdout, unless the
command wrote its own first: `{"error": {"kind": "usage" | "config" | "internal", ...}}`
(docs/schemas/error.schema.json), the human text staying on stderr and the exit code the same.
`--json` counts from the moment it is on the command line, so a usage error click finds before
any option is read gets its document too.

No traceback reaches a user unasked: an internal error is reported as one, with the place its
details were kept, so a bug report can carry them.
"""

from __future__ import annotations

import os
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import click

from flowproof.core.errors import EXIT_CONFIG, EXIT_INTERNAL, FlowproofError, one_line
from flowproof.host.distribution import refuse_a_second_flowproof

DEBUG_VARIABLE = "FLOWPROOF_DEBUG"
TRACEBACK_FILE = "traceback.txt"
_CRASH_DIR = "flowproof.crash_dir"
_ARGS = "flowproof.args"
JSON_FLAG = "--json"


def keep_crash_details_in(directory: Path) -> None:
    """Where the running command's traceback goes if it crashes (the run's own directory)."""
    click.get_current_context().meta[_CRASH_DIR] = directory


WINDOWS_UNSUPPORTED = (
    "error: Windows is not supported yet; run flowproof in WSL (Windows Subsystem for Linux), "
    "where the Linux build runs"
)


class GuardedGroup(click.Group):
    """A click group whose subcommands all run inside the boundary."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # Every way in (the console script, the module, the frozen engine) passes here
        # first. On Windows the command driver cannot start an agent (it needs a POSIX shell
        # and process groups), so stop before anything runs rather than fail mid-flow.
        if sys.platform == "win32":
            _say(WINDOWS_UNSUPPORTED)
            sys.exit(EXIT_CONFIG)
        # before click parses anything, so `--version` is refused too: with the other
        # project's `flowproof` installed alongside, even the version printed may be theirs
        refuse_a_second_flowproof()
        return super().main(*args, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Kept before click reads them: a subcommand's unknown option fails before its
        # `--json` is read, and its error is still owed a JSON document.
        ctx.meta.setdefault(_ARGS, list(args))
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.ClickException as exc:
            if not _json_wanted(ctx):
                raise
            exc.show()
            _error_document("usage", exc, exc.exit_code)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.Abort):
            raise
        except FlowproofError as exc:
            _say(f"error: {exc}")
            if _json_wanted(ctx):
                _error_document("config", exc, EXIT_CONFIG)
            sys.exit(EXIT_CONFIG)
        except Exception as exc:  # noqa: BLE001 - this is the boundary for everything else
            saved = _crashed(ctx, exc)
            if _json_wanted(ctx):
                _error_document("internal", exc, EXIT_INTERNAL, saved)
            sys.exit(EXIT_INTERNAL)


def _json_wanted(ctx: click.Context) -> bool:
    """`--json` was read, or is on the command line before any `--` (a usage error click
    finds first, an unknown option, comes before any option is read)."""
    from flowproof.cli.output import json_wanted

    if json_wanted():
        return True
    args = ctx.meta.get(_ARGS, [])
    given = args[: args.index("--")] if "--" in args else args
    return JSON_FLAG in given


def _error_document(
    kind: Literal["usage", "config", "internal"],
    error: Exception,
    exit_code: int,
    saved: Path | None = None,
) -> None:
    """The command's JSON document when it ended in an error, unless it wrote its own."""
    from flowproof.cli.output import emit, emitted
    from flowproof.documents.error import error_document

    if not emitted():
        emit(error_document(kind, error, exit_code, saved))


def _say(text: str) -> None:
    # The printer (and the redactor it goes through) is loaded only when there is something
    # to say: `flowproof --version` passes this boundary, and its start-up is a target.
    from flowproof.cli.output import out

    out(text)


def _crashed(ctx: click.Context, error: Exception) -> Path | None:
    """Says so on stderr; returns where the traceback was saved."""
    from flowproof.guards.redaction import REDACT

    # A traceback may quote a key or a declared secret; it goes through the same redactor.
    details = REDACT("".join(traceback.format_exception(error)))
    saved = _save(_crash_dir(ctx), details)
    where = f"its traceback is in {saved}" if saved else "its traceback could not be saved"
    _say(
        f"flowproof: internal error ({one_line(error)}); this is a bug in flowproof, not in "
        f"your agent or spec: {where}; {DEBUG_VARIABLE}=1 prints it"
    )
    if os.environ.get(DEBUG_VARIABLE):
        _say(details.rstrip("\n"))
    return saved


def _crash_dir(ctx: click.Context) -> Path:
    found = ctx.meta.get(_CRASH_DIR)
    if isinstance(found, Path):
        return found
    from flowproof.runrecord.store import new_run_id, runs_dir

    return runs_dir(None, os.environ) / f"crash-{new_run_id(datetime.now(UTC))}"


def _save(directory: Path, details: str) -> Path | None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / TRACEBACK_FILE
        path.write_text(details, encoding="utf-8")
    except OSError:
        return None
    return path

"""`flowproof init [--agent CMD] [--no-doctor]`: the files a project needs to start, written
where none exists yet.

It writes the starter flow, the `.gitignore` line for the run records and the two CI
workflows (doors/starter.py builds their texts), and never replaces a file: one that exists
is left alone and named, so init can be run again safely. With `--agent`, the starter flow
starts that command, and `flowproof doctor` runs it once against a canned reply (no model, no
key) so the flow declares what doctor found would stop it from replaying.
"""

from __future__ import annotations

import asyncio
import errno
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from flowproof.cli.output import out
from flowproof.core.errors import EXIT_CONFIG
from flowproof.core.words import plural
from flowproof.doors.starter import (
    GITIGNORE_PATH,
    RECORD_WORKFLOW_PATH,
    REPLAY_WORKFLOW_PATH,
    RUNS_IGNORE_LINE,
    SPEC_PATH,
    STARTER_PROMPT,
    Declared,
    gitignore_with_runs,
    next_commands,
    record_workflow,
    replay_workflow,
    starter_spec,
)
from flowproof.guards.redaction import REDACT

LEFT_ALONE = "left alone (it exists)"


@dataclass(frozen=True, slots=True)
class Outcome:
    path: Path
    done: str
    """What happened to it: 'wrote', 'added .flowproof/ to', LEFT_ALONE, or the failure."""
    failed: bool = False


def init_command(command: str | None, doctor: bool) -> None:
    if command is not None:
        _check_command(command)
    root = Path.cwd()
    outcomes = [
        _write_spec(root, command, doctor),
        _update_gitignore(root),
        _write_new(root, REPLAY_WORKFLOW_PATH, replay_workflow()),
        _write_new(root, RECORD_WORKFLOW_PATH, record_workflow()),
    ]
    for outcome in outcomes:
        out(f"{outcome.done}: {outcome.path.as_posix()}" if not outcome.failed else outcome.done)
    if any(outcome.failed for outcome in outcomes):
        sys.exit(EXIT_CONFIG)
    left_alone = [outcome for outcome in outcomes if outcome.done == LEFT_ALONE]
    if left_alone:
        out("init never replaces a file: delete one to have it written again.")
    out("Next:")
    for line in next_commands(command):
        out(f"  {line}")


def _check_command(command: str) -> None:
    if not command.strip():
        raise click.BadParameter("the agent command is empty", param_hint="--agent")
    if "\n" in command:
        raise click.BadParameter(
            "give the agent command on one line (join its commands with && or ;)",
            param_hint="--agent",
        )
    # A key typed into the command would be committed with the spec.
    if REDACT(command) != command:
        raise click.BadParameter(
            f"the command holds a model key ({REDACT(command)}); leave the key in the "
            "environment, where the agent's client and `flowproof record` read it",
            param_hint="--agent",
        )


def _write_spec(root: Path, command: str | None, doctor: bool) -> Outcome:
    if (root / SPEC_PATH).exists():
        return Outcome(SPEC_PATH, LEFT_ALONE)  # and the agent is not run for nothing
    declared = _run_doctor(command) if command is not None and doctor else None
    return _write_new(root, SPEC_PATH, starter_spec(command, declared))


def _run_doctor(command: str) -> Declared:
    """Doctor's findings for the starter prompt; the engine is imported here only, so that
    init without --agent starts no proxy and imports no server."""
    from flowproof.engine.doctor import DEFAULT_TIMEOUT, run_doctor
    from flowproof.engine.replayability import suggested_lines

    out(f"Running the agent once with flowproof doctor (a canned reply, no model): {command}")
    report = asyncio.run(run_doctor(command, STARTER_PROMPT, DEFAULT_TIMEOUT))
    if not report.arrived:
        out(
            "  no model request reached flowproof's proxy; `flowproof doctor --agent ...` "
            "prints why, and the variables to map."
        )
    else:
        out(f"  {plural(report.arrived, 'model request')} arrived.")
    return Declared(report.arrived, tuple(suggested_lines(report.findings)))


def _update_gitignore(root: Path) -> Outcome:
    path = root / GITIGNORE_PATH
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        return _failure(GITIGNORE_PATH, exc, "read")
    updated = gitignore_with_runs(existing)
    if updated is None:
        return Outcome(GITIGNORE_PATH, f"left alone (it already ignores {RUNS_IGNORE_LINE})")
    try:
        path.write_text(updated, encoding="utf-8")
    except OSError as exc:
        return _failure(GITIGNORE_PATH, exc, "write")
    done = "wrote" if existing is None else f"added {RUNS_IGNORE_LINE} to"
    return Outcome(GITIGNORE_PATH, done)


def _write_new(root: Path, relative: Path, text: str) -> Outcome:
    """Create `relative` with `text`; an existing file is never opened for writing."""
    path = root / relative
    if path.exists() or path.is_symlink():
        return Outcome(relative, LEFT_ALONE)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _failure(relative, exc, "write")
    try:
        # "x": a file that appeared since the check above is not replaced either.
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        return Outcome(relative, LEFT_ALONE)
    except OSError as exc:
        return _failure(relative, exc, "write")
    return Outcome(relative, "wrote")


def _failure(relative: Path, error: OSError | UnicodeDecodeError, verb: str) -> Outcome:
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    in_the_way = _file_in_the_way(relative)
    blocker = _first_unwritable(Path.cwd() / relative)
    if in_the_way:
        fix = f"{in_the_way} is a file where a directory must be: move it away"
    elif isinstance(error, OSError) and error.errno == errno.EROFS:
        fix = "run init in a writable checkout, or write the file yourself from docs/ci.md"
    elif blocker:
        fix = f"make {blocker} writable (chmod u+w {blocker}) or run init where you can write"
    else:
        fix = "fix the path, or create the file yourself from docs/ci.md and docs/specs.md"
    return Outcome(
        relative,
        f"error: cannot {verb} {relative.as_posix()}: {reason}; {fix}, then run "
        "`flowproof init` again (it keeps what it wrote)",
        failed=True,
    )


def _file_in_the_way(relative: Path) -> str | None:
    """The first directory on the way to `relative` that exists as something else."""
    for parent in reversed(relative.parents[:-1]):  # .github, then .github/workflows
        if (Path.cwd() / parent).exists() and not (Path.cwd() / parent).is_dir():
            return parent.as_posix()
    return None


def _first_unwritable(path: Path) -> str | None:
    """The nearest existing file or directory on the way to `path` that this user cannot
    write, relative to the working directory when it is inside it."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            if os.access(candidate, os.W_OK):
                return None
            try:
                return candidate.relative_to(Path.cwd()).as_posix() or "."
            except ValueError:
                return str(candidate)
    return None

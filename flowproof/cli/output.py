"""The one place flowproof writes to its terminal: human text on stderr, with GitHub
annotations in Actions, and, under `--json`, one JSON document on stdout.

Everything written here passes through the shared `REDACT` (flowproof/guards/redaction.py) first:
the record key variables are hidden from the start of every command, and each flow's declared
secrets from the moment it has run. Then no line of it may start a GitHub workflow command (the
runner reads stderr for them as well as stdout): a line that would is set behind `  | `
(guards/workflow_commands.py), whatever a spec, a flow or an agent put into it. flowproof's
own commands are printed by `command`, their values escaped as the runner requires.

`--json` (a command's `json_option` in cli/__init__.py turns it on with `use_json`): the
command's result is ONE JSON document on stdout, written by `emit`, and nothing else reaches
stdout: human text stays on stderr through `out`, and the workflow commands `command` would
print on stdout go to stderr, where the runner reads them too. The exit code is unchanged. A
command that fails before it has a result gets its document from the error boundary
(cli/boundary.py: `{"error": {...}}`, docs/schemas/error.schema.json). JSON escapes every line
break inside a string, so no line of a document can start a workflow command.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from flowproof.guards.redaction import REDACT
from flowproof.guards.workflow_commands import defuse, workflow_command


@dataclass(slots=True)
class _Stdout:
    """What this process's stdout is for: one command runs per process."""

    json: bool = False
    """`--json` was given: stdout holds one JSON document and nothing else."""
    emitted: bool = False
    """That document has been written."""


_STDOUT = _Stdout()


def use_json(enabled: bool) -> None:
    """Set by the running command's `--json` option (cli/__init__.py), before anything prints."""
    _STDOUT.json, _STDOUT.emitted = enabled, False


def json_wanted() -> bool:
    return _STDOUT.json


def emitted() -> bool:
    """Whether the command's JSON document has been written (the boundary writes none then)."""
    return _STDOUT.emitted


def emit(document: Mapping[str, object]) -> None:
    """The command's one JSON document, on stdout, on one line, redacted as a whole (as the run
    record is on disk: runrecord/store.py). A second document is a bug: stdout would no longer
    parse as one."""
    if _STDOUT.emitted:
        raise RuntimeError("a command's JSON document was emitted twice")
    _STDOUT.emitted = True
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    print(REDACT(text), flush=True)


def out(text: str = "") -> None:
    print(defuse(REDACT(text)), file=sys.stderr, flush=True)


def command(name: str, message: str, properties: dict[str, str] | None = None) -> None:
    """A GitHub Actions workflow command, on stdout (where annotations belong; on stderr under
    --json, which keeps stdout for the document); the message and every property redacted,
    then escaped so that none can end its field or its line."""
    hidden = {key: REDACT(value) for key, value in (properties or {}).items()}
    line = workflow_command(name, REDACT(message), hidden)
    print(line, file=sys.stderr if _STDOUT.json else sys.stdout, flush=True)


def annotate_error(file: str, line: int | None, message: str) -> None:
    """A GitHub Actions error annotation on `file` (and `line`, when known)."""
    where = {"file": file, **({"line": str(line)} if line else {})}
    command("error", message, where)

"""The one place flowproof writes human text: stderr, with GitHub annotations in Actions.

Everything written here passes through the shared `REDACT` (flowproof/redaction.py) first:
the record key variables are hidden from the start of every command, and each flow's declared
secrets from the moment it has run. Then no line of it may start a GitHub workflow command (the
runner reads stderr for them as well as stdout): a line that would is set behind `  | `
(flowproof/workflow_commands.py), whatever a spec, a flow or an agent put into it. flowproof's
own commands are printed by `command`, their values escaped as the runner requires.
"""

from __future__ import annotations

import sys

from flowproof.redaction import REDACT
from flowproof.workflow_commands import defuse, workflow_command


def out(text: str = "") -> None:
    print(defuse(REDACT(text)), file=sys.stderr, flush=True)


def command(name: str, message: str, properties: dict[str, str] | None = None) -> None:
    """A GitHub Actions workflow command, on stdout (where annotations belong); the message and
    every property redacted, then escaped so that none can end its field or its line."""
    hidden = {key: REDACT(value) for key, value in (properties or {}).items()}
    print(workflow_command(name, REDACT(message), hidden), flush=True)


def annotate_error(file: str, line: int | None, message: str) -> None:
    """A GitHub Actions error annotation on `file` (and `line`, when known)."""
    where = {"file": file, **({"line": str(line)} if line else {})}
    command("error", message, where)

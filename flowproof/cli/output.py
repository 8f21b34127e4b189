"""The one place flowproof writes human text: stderr, with GitHub annotations in Actions.

Everything written here passes through the shared `REDACT` (flowproof/redaction.py) first:
the record key variables are hidden from the start of every command, and each flow's declared
secrets from the moment it has run.
"""

from __future__ import annotations

import sys

from flowproof.redaction import REDACT


def out(text: str = "") -> None:
    print(REDACT(text), file=sys.stderr, flush=True)


def annotate_error(file: str, line: int | None, message: str) -> None:
    """A GitHub Actions error annotation; the workflow-command format needs %, CR and LF escaped,
    and it must go to stdout, where the runner reads workflow commands."""
    escaped = REDACT(message).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    where = f"file={file}" + (f",line={line}" if line else "")
    print(f"::error {where}::{escaped}", flush=True)

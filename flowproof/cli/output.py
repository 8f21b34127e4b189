"""The one place flowproof writes human text: stderr, with GitHub annotations in Actions."""

from __future__ import annotations

import sys


def out(text: str = "") -> None:
    print(text, file=sys.stderr, flush=True)


def indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def annotate_error(file: str, line: int | None, message: str) -> None:
    """A GitHub Actions error annotation; the workflow-command format needs %, CR and LF escaped,
    and it must go to stdout, where the runner reads workflow commands."""
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    where = f"file={file}" + (f",line={line}" if line else "")
    print(f"::error {where}::{escaped}", flush=True)

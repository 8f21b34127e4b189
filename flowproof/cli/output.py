"""The one place flowproof writes human text: stderr, with GitHub annotations in Actions."""

from __future__ import annotations

import sys


def out(text: str = "") -> None:
    print(text, file=sys.stderr, flush=True)


def indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())

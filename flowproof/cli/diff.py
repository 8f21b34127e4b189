"""`flowproof diff OLD NEW`: the trajectory changes between two trace files."""

from __future__ import annotations

import sys
from pathlib import Path

from flowproof.cli.output import out
from flowproof.engine.lanes import trace_changes
from flowproof.trace.store import load_trace


def diff_files(old: str, new: str) -> None:
    changes = trace_changes(load_trace(Path(old)), load_trace(Path(new)))
    if not changes:
        out(f"no trajectory changes between {old} and {new}")
        sys.exit(0)
    out(f"trajectory changes from {old} to {new}:")
    for change in changes:
        out(f"  - {change}")
    sys.exit(1)

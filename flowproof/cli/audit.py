"""`flowproof audit`: print the controls summary, optionally as HTML / markdown files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from flowproof.audit.summarize import render, summarize
from flowproof.cli.output import out
from flowproof.files import write_text_atomic
from flowproof.runrecord.store import runs_dir
from flowproof.words import plural
from flowproof.workflow_commands import quoted


def audit_command(runs_dir_given: str | None, html: str | None, markdown: str | None) -> None:
    root = runs_dir(runs_dir_given, os.environ)
    rows, count = summarize(root)
    if html:
        write_text_atomic(Path(html), render(rows, count, "audit.html.j2"))
    if markdown:
        write_text_atomic(Path(markdown), render(rows, count, "audit.md.j2"))
    if not rows:
        out(f"no controls found in {plural(count, 'run record')} under {root}")
        return
    out(f"{plural(len(rows), 'control')} (latest verdict each, from {count} runs):")
    for row in rows:
        mark = "!" if row.attention else " "
        note = f"  ← {row.attention}" if row.attention else ""
        out(
            f"{mark} {quoted(row.id):<32} {row.verdict.upper():<5} "
            f"lanes: {', '.join(row.lanes):<28} containment: {quoted(row.containment):<12} "
            f"run {quoted(row.run_id)}{note}"
        )
    # Exit 1 when any control needs attention, so CI can gate on the audit itself.
    sys.exit(1 if any(row.attention for row in rows) else 0)

"""`flowproof audit --markdown`: names, control ids and specs are untrusted text, escaped with
the PR comment's own filters (report/markdown.py), so a row is one intact table row with no
live mention, HTML or issue link in it."""

from __future__ import annotations

import re

from flowproof.audit.summarize import ControlRow, render

HOSTILE = "@octocat <img src=x> #1"


def hostile_row() -> ControlRow:
    return ControlRow(
        id=f"{HOSTILE} | sec.x\n::warning line",
        verdict="fail",
        lanes=("model", "mcp.bank"),
        containment="contained (seccomp)",
        run_id="20261129T101500Z-a1b2c3",
        run_at="2026-11-29T10:15:00Z",
        spec=f"specs/{HOSTILE}|x.yaml",
        flow=f"{HOSTILE} | pays\nonce",
    )


def cells(row: str) -> list[str]:
    """A GFM table row split as GitHub splits it: on every `|` not escaped by a backslash."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


def outside_code(text: str) -> str:
    """`text` without its inline code spans, where markdown and mentions are inert."""
    return re.sub(r"(`+).*?\1", "", text)


def test_a_hostile_row_stays_one_inert_table_row() -> None:
    text = render([hostile_row()], 1, "audit.md.j2")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 2, text  # the header and the one control: no line break escaped
    header, row = rows
    assert len(cells(row)) == len(cells(header)) == 6, row
    assert cells(row)[0] == "⚠ `@octocat <img src=x> #1 \\| sec.x ::warning line`"
    assert cells(row)[5] == (
        "\\@octocat \\<img src=x\\> \\#1 \\| pays once (`specs/@octocat <img src=x> #1\\|x.yaml`)"
    )
    prose = outside_code(row)
    assert not re.search(r"(?<!\\)[@<#]", prose), prose  # no mention, HTML or issue link

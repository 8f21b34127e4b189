"""`flowproof audit --markdown`: names, control ids and specs are untrusted text, escaped with
the PR comment's own filters (report/markdown.py), so a row is one intact table row with no
live mention, HTML or issue link in it."""

from __future__ import annotations

import re
from dataclasses import replace

from flowproof.audit.render import render
from flowproof.audit.since import Changes, compare
from flowproof.audit.summarize import ControlRow

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


def since_r1(now: list[ControlRow]) -> Changes:
    """Today's `now` against a baseline run r1 whose table held the hostile row, passing."""
    return compare(
        [replace(hostile_row(), verdict="pass", run_id="r1")],
        now,
        baseline="r1",
        baseline_at="2026-11-28T09:00:00Z",
        latest="r2",
    )


def test_what_changed_since_a_run_is_escaped_as_the_table_is() -> None:
    failed = replace(hostile_row(), run_id="r2")
    added = replace(hostile_row(), id=f"{HOSTILE} new", verdict="pass", run_id="r2")
    text = render([failed, added], 2, "audit.md.j2", since_r1([failed, added]))
    section = text[text.index("### Since run `r1` (2026-11-28T09:00:00Z)") :]
    assert "#### Added (1)\n\n- `@octocat <img src=x> #1 new`: ✅ pass (run `r2`)\n" in section
    assert "#### Removed (0)\n\n- none\n" in section
    assert (
        "#### Verdict changed, was → now (1)\n\n"
        "- `@octocat <img src=x> #1 | sec.x ::warning line`: pass → ❌ fail (run `r1` → run `r2`)\n"
    ) in section
    headings = [line for line in section.splitlines() if line.startswith("#")]
    assert len(headings) == 4, headings  # no line break in an id started a line of its own
    prose = outside_code(section.replace("####", "").replace("###", ""))
    assert not re.search(r"(?<!\\)[@<#]", prose), prose


def test_a_control_the_latest_run_did_not_evidence_is_removed_in_the_html() -> None:
    stale = replace(hostile_row(), verdict="pass", run_id="r1")
    html = render([stale], 2, "audit.html.j2", since_r1([stale]))
    removed = html[html.index('<ul class="removed">') : html.index('<ul class="changed">')]
    assert (
        "<li><code>@octocat &lt;img src=x&gt; #1 | sec.x\n::warning line</code>: not evidenced by "
        'the latest run; last <span class="pass">pass</span>'
    ) in removed
    assert "<img" not in html
    assert '<ul class="added">\n  <li class="note">none</li>' in html

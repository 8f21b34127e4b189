"""Untrusted text in GitHub-flavoured markdown: one set of escapes for every markdown flowproof
writes (the PR comment, the job summary, the controls audit) and one reading of code fences for
every place that cuts markdown short.

Names, reasons, replies and control ids come from specs, agents and models. Left raw in a
comment, `@octocat` pings a person, `#1` links an issue, `<img src=x>` is live HTML, and a `|`
or a line break splits a table row. Pure, and free of jinja2, so the GitHub client can cut a
comment without loading the report renderer.
"""

from __future__ import annotations

import re
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~&@])|^([-+=])")
# A fence line: up to three spaces, three or more backticks or tildes, then an info string.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def md(text: Any) -> str:
    """Prose-safe markdown: one line, punctuation that markdown (or GitHub's @mentions and
    #references) would act on backslash-escaped."""
    return _MD_SPECIAL.sub(lambda m: "\\" + m[0], " ".join(str(text).split()))


def code(text: Any) -> str:
    """An inline code span that holds any text: the fence outgrows the longest backtick run."""
    text = " ".join(str(text).split())
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def cell(text: Any) -> str:
    """Inline code inside a table row, where GFM splits on `|` even inside code spans."""
    return code(text).replace("|", "\\|")


def fence(text: Any, info: str = "text") -> str:
    """A fenced code block holding `text` whole: its fence is longer than any backtick run."""
    text = str(text).rstrip("\n")
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def open_fence(text: str) -> str | None:
    """The fence of a code block `text` leaves open (so a cut can close it), or None.

    CommonMark's rule, which a count of "```" gets wrong: a block opened by N backticks (or
    tildes) closes only at a line of at least N of the same character with nothing after but
    blanks; a shorter run inside it, such as the "```" a six-backtick fence exists to hold, is
    content."""
    opened: str | None = None
    for line in text.splitlines():
        found = _FENCE.fullmatch(line)
        if found is None:
            continue
        run, rest = found[1], found[2]
        if opened is None:
            if not (run[0] == "`" and "`" in rest):  # a backtick fence's info holds no backtick
                opened = run
        elif run[0] == opened[0] and len(run) >= len(opened) and not rest.strip():
            opened = None
    return opened


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall("`+", text)), default=0)

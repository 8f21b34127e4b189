"""Reports rendered from a run record: one self-contained HTML page, a PR-comment markdown, JUnit.

The input is always the run record (runrecord/model.py, read from `report.json`), never live
objects. Tool arguments, tool results, replies and agent stderr inside it are untrusted
text, so every template escapes for its own format: HTML and XML are autoescaped by jinja2,
markdown goes through the `code`/`cell`/`fence`/`md` filters (report/markdown.py).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from flowproof.core.files import write_text_atomic
from flowproof.core.words import plural
from flowproof.report.markdown import cell, code, fence, md, open_fence
from flowproof.report.view import RunView, block, build_view
from flowproof.runrecord.model import RunRecord

COMMENT_LIMIT = 65536
"""GitHub's limit on the body of a pull-request comment, in characters."""
MAX_ERRORS_SHOWN = 20
"""Configuration errors listed in the PR comment; the rest are counted."""
CLIP = 2000
"""Characters of one reason or value shown in the PR comment before it is clipped."""

# Characters XML 1.0 forbids even as character references (C0 controls but tab, LF and CR;
# U+FFFE/U+FFFF; lone surrogates). Agent stderr tails carry ANSI escapes, so this is not academic.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("flowproof.report"),
        # The templates are named `run.html.j2`, and select_autoescape matches the end of the
        # name: "html" alone would leave `*.html.j2` unescaped, so the .j2 names are listed.
        autoescape=select_autoescape(["html", "html.j2", "xml", "xml.j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_visible,
    )
    env.filters.update(
        clip=_clip,
        md=md,
        code=code,
        cell=cell,
        fence=fence,
        xml=_xml,
        xml_attr=_xml_attr,
        seconds=_seconds,
        plural=plural,
        block=block,
    )
    return env


def render_html(record: RunRecord) -> str:
    """One self-contained page: inline CSS, no scripts, nothing fetched from the network."""
    return environment().get_template("run.html.j2").render(run=build_view(record))


def render_markdown(record: RunRecord, limit: int = COMMENT_LIMIT) -> str:
    """A pull-request comment, failures first, shorter than `limit` characters.

    When the whole run does not fit, whole flows are left out from the end (passing flows go
    first, since failures are listed first) and a note says how many, and names the run.
    """
    run = build_view(record)
    text = _markdown(run, len(run.flows), limit)
    if len(text) < limit:
        return text
    fits, too_many = 0, len(run.flows)  # invariant: `too_many` flows do not fit
    while too_many - fits > 1:
        middle = (fits + too_many) // 2
        if len(_markdown(run, middle, limit)) < limit:
            fits = middle
        else:
            too_many = middle
    text = _markdown(run, fits, limit)
    return text if len(text) < limit else _cut(text, limit, run)


def render_junit(record: RunRecord) -> str:
    """JUnit XML: one testcase per flow (classname = spec path, name = flow name), the first
    reason as the failure message and every reason in its body; configuration errors as
    `<error>` testcases."""
    return environment().get_template("junit.xml.j2").render(run=build_view(record))


def write_reports(
    record: RunRecord,
    *,
    html: str | None = None,
    markdown: str | None = None,
    junit: str | None = None,
) -> None:
    """Render each report asked for, then write each atomically (a record that cannot be
    rendered leaves every file as it was)."""
    wanted = ((html, render_html), (markdown, render_markdown), (junit, render_junit))
    rendered = [(Path(path), render(record)) for path, render in wanted if path]
    for path, text in rendered:
        write_text_atomic(path, text)


def _markdown(run: RunView, shown: int, limit: int) -> str:
    return (
        environment()
        .get_template("pr_comment.md.j2")
        .render(
            run=run,
            flows=run.flows[:shown],
            omitted=len(run.flows) - shown,
            limit=limit,
            max_errors=MAX_ERRORS_SHOWN,
        )
    )


def _cut(text: str, limit: int, run: RunView) -> str:
    """Last resort, when even the header does not fit: cut at a line, close a code fence the
    cut left open, and say so."""
    note = (
        f"\n\n---\n✂️ Cut at {limit:,} characters. The full report: run {code(run.run_id)} "
        f"({code(run.record_path)}).\n"
    )
    head = text[: max(0, limit - len(note) - 40)]
    head = head[: head.rfind("\n") + 1]
    left_open = open_fence(head)
    return head + (f"{left_open}\n" if left_open else "") + note


# --- filters -------------------------------------------------------------------------------


def _visible(value: Any) -> Any:
    """Every `{{ }}` output: control characters (ANSI colour codes in an agent's stderr) shown
    as `\\xNN` rather than passed to a browser, a PR comment or an XML parser. Markup is left
    alone: it was built from already-finalized values."""
    if type(value) is str:
        return _XML_ILLEGAL.sub(_escape_char, value)
    return value


def _escape_char(match: re.Match[str]) -> str:
    return f"\\x{ord(match[0]):02x}"


def _clip(value: Any, width: int = CLIP) -> str:
    text = str(value)
    if len(text) <= width:
        return text
    return f"{text[:width]}… ({len(text) - width:,} more characters in the HTML report)"


def _xml(text: Any) -> Markup:
    """Element text: what XML 1.0 forbids shown as `\\xNN`, then `&`, `<`, `>` escaped (quotes
    need no escaping in text, and leaving them keeps the golden files readable)."""
    cleaned = _XML_ILLEGAL.sub(_escape_char, str(text))
    return Markup(cleaned.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _xml_attr(text: Any) -> Markup:
    """A double-quoted attribute value; line breaks and tabs kept as character references (a
    parser would otherwise fold them to spaces)."""
    escaped = str(_xml(text)).replace('"', "&quot;")
    for char, ref in (("\n", "&#10;"), ("\r", "&#13;"), ("\t", "&#9;")):
        escaped = escaped.replace(char, ref)
    return Markup(escaped)


def _seconds(value: float | None) -> str:
    return "0.000" if value is None else f"{value:.3f}"

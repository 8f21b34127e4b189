"""Reports rendered from a run record: HTML page, PR-comment markdown, JUnit XML."""

from flowproof.report.render import render_html, render_junit, render_markdown, write_reports

__all__ = ["render_html", "render_junit", "render_markdown", "write_reports"]

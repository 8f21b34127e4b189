"""The audit table (and, with `--since`, what changed) as text, through the report package's
jinja2 environment, so it is escaped by the same rules as every other report."""

from __future__ import annotations

from flowproof.audit.since import Changes
from flowproof.audit.summarize import ControlRow


def render(rows: list[ControlRow], runs: int, template: str, changes: Changes | None = None) -> str:
    """`rows` (sorted by control id) from `runs` run records, through `template`."""
    from flowproof.report.render import environment

    return environment().get_template(template).render(rows=rows, runs=runs, changes=changes)

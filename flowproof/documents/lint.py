"""`trace lint --json`: what must not be committed, found in the traces."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowproof.runrecord.base import RecordModel

if TYPE_CHECKING:
    from flowproof.trace.lint import Finding as LintHit


class LintFinding(RecordModel):
    """Something that must not be committed, found in a trace."""

    trace: str
    """The trace file, as found under the paths given."""
    path: str
    """Where in the file: `lanes.model[2].request.messages[1].content`, or `(file)` for an
    orphan trace."""
    rule: str
    """What was found: `an OpenAI API key`, `a header-like key 'authorization'`."""
    remedy: str
    """What makes the finding go away."""


class LintDocument(RecordModel):
    """What `flowproof trace lint --json` prints."""

    exit_code: int
    """0 clean, 1 on findings."""
    traces: list[str]
    """Every trace scanned."""
    findings: list[LintFinding]
    untraced_specs: list[str]
    """Specs with no trace yet: reported, not counted (`run` fails them anyway)."""


def lint_document(
    traces: Sequence[Path], findings: Sequence[LintHit], untraced: Sequence[Path], exit_code: int
) -> dict[str, Any]:
    document = LintDocument(
        exit_code=exit_code,
        traces=[str(trace) for trace in traces],
        findings=[
            LintFinding(trace=hit.trace, path=hit.path, rule=hit.rule, remedy=hit.remedy)
            for hit in findings
        ],
        untraced_specs=[str(spec) for spec in untraced],
    )
    return document.model_dump(mode="json")

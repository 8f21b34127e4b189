"""`flowproof audit --json`: the document on stdout, and docs/schemas/audit.schema.json from it.

    python -m flowproof.audit.schema > docs/schemas/audit.schema.json

A unit test fails when the committed schema differs from what this renders, and the
end-to-end tests validate what `audit --json` prints against the committed file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flowproof.audit.since import Changes
from flowproof.audit.summarize import ControlRow
from flowproof.runrecord.model import FlowVerdict

SCHEMA_ID = "https://flowproof.dev/schemas/audit.schema.json"
FORMAT_VERSION: Literal[1] = 1


class _Model(BaseModel):
    # Loaded only by `audit --json` and the schema, so reading the docstrings as the models
    # are defined costs nothing any other command pays.
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
        # Every field is always printed, defaulted or not: the schema says so to its readers.
        json_schema_serialization_defaults_required=True,
    )


class AuditControl(_Model):
    """A control's latest verdict, what it asserted, what enforced it, and the run it came from."""

    id: str
    """The control id, as the spec declares it (`control: <id>`)."""
    verdict: FlowVerdict
    lanes: list[str]
    """What the flow ASSERTED: the control lanes of its step kinds."""
    containment: str
    """What ENFORCED it: the containment tier of that run."""
    run_id: str
    """The run this row comes from (the last run that evidenced the control)."""
    run_at: str
    """When that run started: UTC, ISO 8601."""
    spec: str
    flow: str
    attention: str | None
    """Why the control stands out (its latest run failed, or it asserts egress and its run
    was not contained), or null for a plain pass."""


class VerdictChange(_Model):
    """A control in both the baseline's table and today's, whose verdict differs."""

    id: str
    was: FlowVerdict
    """The verdict as of the baseline."""
    now: FlowVerdict
    was_run_id: str
    """The run the baseline's verdict came from (the baseline run or one before it)."""
    now_run_id: str


class AuditSince(_Model):
    """`--since`: what changed between the audit as of the baseline run and today's."""

    run_id: str
    """The baseline: the run given, or the last run started at or before the date given."""
    run_at: str
    added: list[AuditControl]
    """Controls first evidenced after the baseline, as they are today."""
    removed: list[AuditControl]
    """Controls that the baseline run or a run since evidenced and the latest run did not,
    each with its last verdict and the run that gave it. Empty when the baseline is the
    latest run."""
    changed: list[VerdictChange]
    """Controls whose verdict changed (was → now); a removed control is not listed here."""


class AuditDocument(_Model):
    """The one document on stdout: the latest verdict of every control across the run records,
    and with `--since`, what changed since a run."""

    format_version: Literal[1] = FORMAT_VERSION
    runs_dir: str
    """The runs directory read."""
    runs: int
    """How many run records it holds."""
    controls: list[AuditControl]
    """Every control, sorted by id: its latest verdict."""
    since: AuditSince | None
    """Present (not null) when `--since` was given."""
    exit_code: Literal[0, 1]
    """The command's exit code: 1 when any control stands out (has an `attention`), else 0.
    What changed since the baseline does not affect it."""


def audit_document(
    rows: Sequence[ControlRow], runs: int, runs_dir: str, changes: Changes | None
) -> AuditDocument:
    return AuditDocument(
        runs_dir=runs_dir,
        runs=runs,
        controls=[_control(row) for row in rows],
        since=_since(changes) if changes else None,
        exit_code=1 if any(row.attention for row in rows) else 0,
    )


def _control(row: ControlRow) -> AuditControl:
    return AuditControl(
        id=row.id,
        verdict=row.verdict,
        lanes=list(row.lanes),
        containment=row.containment,
        run_id=row.run_id,
        run_at=row.run_at,
        spec=row.spec,
        flow=row.flow,
        attention=row.attention or None,
    )


def _since(changes: Changes) -> AuditSince:
    return AuditSince(
        run_id=changes.run_id,
        run_at=changes.run_at,
        added=[_control(row) for row in changes.added],
        removed=[_control(row) for row in changes.removed],
        changed=[
            VerdictChange(
                id=change.id,
                was=change.was.verdict,
                now=change.now.verdict,
                was_run_id=change.was.run_id,
                now_run_id=change.now.run_id,
            )
            for change in changes.changed
        ],
    )


def render_schema() -> str:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **AuditDocument.model_json_schema(mode="serialization"),
    }
    schema["description"] = (
        f"`flowproof audit --json`, format {FORMAT_VERSION}. " + str(schema.get("description", ""))
    ).strip()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_schema())

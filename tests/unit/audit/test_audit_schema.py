"""docs/schemas/audit.schema.json is the one the `audit --json` model generates, and it accepts
the documents flowproof prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from flowproof.audit.schema import audit_document, render_schema
from flowproof.audit.since import compare
from tests.unit.audit.test_since import row

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "docs" / "schemas" / "audit.schema.json"


def test_the_committed_schema_is_current() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render_schema(), (
        "docs/schemas/audit.schema.json is stale: regenerate it with "
        "`python -m flowproof.audit.schema > docs/schemas/audit.schema.json`"
    )


def test_the_module_prints_the_schema() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flowproof.audit.schema"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout == render_schema()


def document() -> dict:
    then = [row("sec.a", "pass", "r1"), row("sec.b", "pass", "r1")]
    now = [row("sec.a", "fail", "r2"), row("sec.b", "pass", "r1"), row("sec.c", "pass", "r2")]
    changes = compare(then, now, baseline="r1", baseline_at="t1", latest="r2")
    result: dict = audit_document(now, 2, "runs", changes).model_dump(mode="json")
    return result


def test_a_document_validates_and_says_what_changed() -> None:
    printed = document()
    jsonschema.validate(printed, json.loads(COMMITTED.read_text(encoding="utf-8")))
    assert printed["exit_code"] == 1  # sec.a's latest run failed
    assert printed["controls"][0]["attention"] == "latest run failed"
    assert printed["controls"][1]["attention"] is None
    since = printed["since"]
    assert [c["id"] for c in since["added"]] == ["sec.c"]
    assert [c["id"] for c in since["removed"]] == ["sec.b"]  # not evidenced by r2, the latest
    assert since["changed"] == [
        {"id": "sec.a", "was": "pass", "now": "fail", "was_run_id": "r1", "now_run_id": "r2"}
    ]


@pytest.mark.parametrize(
    ("path", "value"),
    [(("exit_code",), 3), (("since", "changed", 0, "now"), "passed"), (("controls", 0, "x"), 1)],
)
def test_the_schema_refuses_a_broken_document(path: tuple, value: object) -> None:
    broken = document()
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads(COMMITTED.read_text(encoding="utf-8")))

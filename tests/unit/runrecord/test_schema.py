"""The committed JSON Schema is the one the model generates, and it accepts what flowproof writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema

from flowproof.runrecord.schema import render_schema
from tests.unit.report.builders import golden_record

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "docs" / "schemas" / "run-record.schema.json"


def test_the_committed_schema_is_current() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render_schema(), (
        "docs/schemas/run-record.schema.json is stale: regenerate it with "
        "`python -m flowproof.runrecord.schema > docs/schemas/run-record.schema.json`"
    )


def test_the_module_prints_the_schema() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flowproof.runrecord.schema"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout == render_schema()


def test_the_schema_accepts_a_record_and_refuses_a_broken_one() -> None:
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    jsonschema.validate(golden_record(), schema)
    broken = golden_record()
    broken["flows"][0]["steps"][0]["passed"] = "yes"
    try:
        jsonschema.validate(broken, schema)
    except jsonschema.ValidationError as exc:
        assert exc.json_path == "$.flows[0].steps[0].passed"
    else:
        raise AssertionError("a step whose `passed` is a string validated")

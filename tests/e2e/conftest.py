"""End-to-end fixtures."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import ROOT
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

SCHEMA = ROOT / "docs" / "schemas" / "run-record.schema.json"


@cache
def _validator() -> Any:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(autouse=True)
def run_records_match_the_schema(tmp_path: Path) -> Iterator[None]:
    """Every run record an end-to-end test makes flowproof write validates against the
    committed schema (docs/schemas/run-record.schema.json), whatever the test checks itself."""
    started = time.time() - 1
    yield
    written = list(tmp_path.rglob("report.json"))
    written += [
        path
        for path in (ROOT / ".flowproof" / "runs").glob("*/report.json")
        if path.stat().st_mtime >= started
    ]
    for path in written:
        errors = sorted(
            _validator().iter_errors(json.loads(path.read_text(encoding="utf-8"))),
            key=lambda error: error.json_path,
        )
        assert not errors, f"{path} does not match {SCHEMA.name}: " + "; ".join(
            f"{error.json_path}: {error.message}" for error in errors[:5]
        )


@pytest.fixture
def recorded(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    """A project whose booking flow has been recorded; the upstream is stopped afterwards."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    upstream.stop()
    return tmp_path

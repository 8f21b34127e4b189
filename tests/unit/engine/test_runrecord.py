"""The run record: atomic, versioned, sortable ids, and never a secret value."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from flowproof.engine.outcome import Summary
from flowproof.engine.runrecord import latest_run, load_run_record, new_run_id, write_run_record
from flowproof.errors import TraceError


def test_run_ids_sort_by_time() -> None:
    early = new_run_id(datetime(2026, 11, 29, 9, 5, 1, tzinfo=UTC))
    late = new_run_id(datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC))
    assert early.startswith("20261129T090501Z-") and sorted([late, early]) == [early, late]


def test_secret_values_are_redacted_from_the_whole_record(tmp_path: Path) -> None:
    flows = [{"name": "f", "reply": 'the password is s3cr"et and the key sk-live-1'}]
    path = write_run_record(
        Summary(),
        "replay",
        datetime.now(UTC),
        flows,
        {"FLOWPROOF_AGENT_KEY": "sk-live-1"},
        {"DB_PASSWORD": 's3cr"et'},
        root=tmp_path,
    )
    text = path.read_text()
    assert 's3cr\\"et' not in text and "sk-live-1" not in text
    reply = json.loads(text)["flows"][0]["reply"]
    assert (
        reply == "the password is [redacted DB_PASSWORD] and the key [redacted FLOWPROOF_AGENT_KEY]"
    )
    assert latest_run(tmp_path) == path
    assert load_run_record(path.parent)["mode"] == "replay"


def test_a_newer_run_record_is_refused(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"format_version": 99}')
    with pytest.raises(TraceError, match=r"newer flowproof \(format 99\)"):
        load_run_record(tmp_path)

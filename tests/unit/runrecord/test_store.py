"""The run record: atomic, versioned, migrated forward, sortable ids, and never a secret value."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flowproof.core.errors import RunRecordError
from flowproof.core.lanes import MODEL_LANE
from flowproof.engine.runrecord import run_record
from flowproof.guards.redaction import Redactor
from flowproof.matching.divergence import Difference, Divergence, shape_changed
from flowproof.runrecord.model import FORMAT_VERSION, RunRecord
from flowproof.runrecord.store import (
    latest_run,
    load_run_record,
    new_run_id,
    parse_run_record,
    runs_dir,
    write_run_record,
)
from tests.unit.report.builders import golden_record, make_flow

ROOT = Path(__file__).resolve().parents[3]
V1 = ROOT / "tests" / "data" / "runrecords" / "v1"


def test_run_ids_sort_by_time() -> None:
    early = new_run_id(datetime(2026, 11, 29, 9, 5, 1, tzinfo=UTC))
    late = new_run_id(datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC))
    assert early.startswith("20261129T090501Z-") and sorted([late, early]) == [early, late]


def test_secret_values_are_redacted_from_the_whole_record(tmp_path: Path) -> None:
    flow = make_flow(reply='the password is s3cr"et and the key sk-live-1')
    document = {**golden_record(), "flows": [flow]}
    record = RunRecord.model_validate(document)
    redact = Redactor({"DB_PASSWORD": 's3cr"et'})
    redact.hide_record_keys({"FLOWPROOF_AGENT_KEY": "sk-live-1"})
    path = write_run_record(record, tmp_path, redact)
    text = path.read_text()
    assert 's3cr\\"et' not in text and "sk-live-1" not in text
    reply = json.loads(text)["flows"][0]["trajectory"]["reply"]
    assert (
        reply == "the password is [redacted DB_PASSWORD] and the key [redacted FLOWPROOF_AGENT_KEY]"
    )
    assert latest_run(tmp_path) == path
    assert load_run_record(path.parent).mode == "replay"


def test_a_record_round_trips_through_its_model(tmp_path: Path) -> None:
    record = run_record("20261201T000000Z-abcdef", "record", datetime.now(UTC), 0, [], [])
    path = write_run_record(record, tmp_path, Redactor())
    assert load_run_record(path) == record


def test_a_newer_run_record_is_refused_naming_both_versions(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"format_version": 99}')
    with pytest.raises(
        RunRecordError,
        match=r"newer flowproof \(format 99\); upgrade flowproof: this one \(.*\) reads "
        rf"run-record formats up to {FORMAT_VERSION}",
    ):
        load_run_record(tmp_path)


@pytest.mark.parametrize("name", ["golden", "demo"])
def test_format_1_records_load_with_their_facts_in_fields(name: str) -> None:
    record = load_run_record(V1 / f"{name}.report.json")
    assert record.format_version == FORMAT_VERSION
    if name == "golden":
        refused = record.flows[2].steps[0]
        assert (refused.kind, refused.passed, refused.file) == (
            "assert_no_tool_call",
            False,
            "specs/refund.yaml",
        )
        assert refused.observed == 'issue_refund was called with {"amount": 1200} in turn 2'
        divergence = record.flows[1].divergence
        assert divergence is not None
        assert (divergence.lane, divergence.index, divergence.recorded_index) == ("model", 3, 3)
        assert divergence.path == "messages[4].tool_calls[0].function.arguments: flight.id"
        assert (divergence.recorded, divergence.replayed) == ('"KQ311"', '"KQ999"')
        assert (record.errors[0].spec, record.errors[0].line) == ("specs/broken.yaml", 4)
    else:
        assert [turn.known for turn in record.flows[0].timeline] == [True, True, True]


def test_the_runs_dir_is_the_option_then_the_variable_then_the_default() -> None:
    assert runs_dir("given", {"FLOWPROOF_RUNS_DIR": "env"}) == Path("given")
    assert runs_dir(None, {"FLOWPROOF_RUNS_DIR": "env"}) == Path("env")
    assert runs_dir(None, {}) == Path(".flowproof/runs")


def _format_3_divergence(divergence: Divergence) -> dict[str, Any]:
    """A divergence as format 3 wrote it: its conversation facts and remedy only in words."""
    first = divergence.difference
    return {
        "lane": divergence.lane,
        "index": divergence.index,
        "recorded_index": divergence.recorded_index,
        "envelope": list(divergence.envelope),
        "path": first.path if first else None,
        "recorded": first.recorded if first else None,
        "replayed": first.replayed if first else None,
        "note": first.note if first else "",
        "reason": divergence.reason,
        "differences": [
            {"path": d.path, "recorded": d.recorded, "replayed": d.replayed, "note": d.note}
            for d in divergence.fields
        ],
        "more_differences": divergence.unshown,
        "headline": divergence.headline,
        "text": divergence.render(),
    }


@pytest.mark.parametrize(
    "divergence",
    [
        shape_changed(5, 2, 2, 3),
        Divergence(
            MODEL_LANE,
            4,
            3,
            (),
            Difference("messages[1].content", '"Mon"', '"Tue"'),
            remedy="declare `normalize: [date]` in the spec, then record again",
            conversation_turn=2,
            turn_request=1,
        ),
    ],
    ids=["shape-changed", "in-a-turn-with-a-remedy"],
)
def test_a_format_3_divergence_reads_forward_worded_as_it_was(divergence: Divergence) -> None:
    flow = make_flow()
    document = {**golden_record(), "format_version": 3, "flows": [flow]}
    flow["divergence"] = _format_3_divergence(divergence)
    record = parse_run_record(document, "report.json")
    read = record.flows[0].divergence
    assert read == divergence
    assert (read.headline, read.render()) == (divergence.headline, divergence.render())

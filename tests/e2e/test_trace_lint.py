"""`flowproof trace lint` as a CI gate, and the same scan failing a record before it writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e
LOOKS_LIKE_A_KEY = "sk-proj-" + "Q7w8E9r0T1y2U3i4" * 2


def test_a_key_shaped_string_in_the_traffic_fails_the_record(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, agent_env={"AGENT_BUG": "leak-secret"})
    result = record(tmp_path, upstream, DB_PASSWORD=LOOKS_LIKE_A_KEY)
    assert result.code == 1, result.output
    assert (
        "the trace would hold an OpenAI API key at lanes.model[0].request.messages[1].content, "
        "so it was not written"
    ) in result.stderr
    assert LOOKS_LIKE_A_KEY not in result.output
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


def test_the_gate_names_file_path_and_rule_and_an_allow_entry_accepts_it(recorded: Path) -> None:
    assert flowproof("trace", "lint", cwd=recorded).code == 0
    trace = recorded / "specs" / "booking.trace.json"
    document = json.loads(trace.read_text())
    document["lanes"]["model"][0]["request"]["messages"][1]["content"] += f" {LOOKS_LIKE_A_KEY}"
    trace.write_text(json.dumps(document))
    shutil.copy(trace, recorded / "specs" / "forgotten.trace.json")
    result = flowproof("trace", "lint", cwd=recorded)
    assert result.code == 1, result.output
    where = "lanes.model[0].request.messages[1].content"
    assert f"specs/booking.trace.json: {where}: an OpenAI API key" in result.stderr
    assert "specs/forgotten.trace.json: (file): an orphan trace" in result.stderr
    assert LOOKS_LIKE_A_KEY not in result.output
    (recorded / "specs" / "forgotten.trace.json").unlink()
    (recorded / "flowproof.yaml").write_text(
        "trace_lint:\n  allow:\n    - trace: specs/booking.trace.json\n"
        f"      path: {where}\n      rule: an OpenAI API key\n"
        "      reason: a documented example key from the provider's docs\n"
    )
    assert flowproof("trace", "lint", cwd=recorded).code == 0


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = flowproof("trace", "lint", "nowhere", cwd=tmp_path)
    assert result.code == 2 and "nowhere: no such file or directory" in result.stderr

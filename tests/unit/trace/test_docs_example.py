"""docs/replay.md's trace example is the shape `flowproof record` writes today: its header
(format version, default facts, key order) and a turn's fields are checked against the demo's
committed trace, which record wrote, and against the codec's current format."""

from __future__ import annotations

import json
import re

from flowproof.trace.codec import SINGLE_TURN_FORMAT
from tests.conftest import ROOT

DEMO_TRACE = ROOT / "examples" / "agent-demo" / "specs" / "booking.trace.json"


def documented_trace() -> dict:
    page = (ROOT / "docs" / "replay.md").read_text()
    section = page.split("## The trace file", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert block is not None, "docs/replay.md: no ```json block under 'The trace file'"
    # The example elides long lists as `[ ... ]`: read them as empty.
    return json.loads(block.group(1).replace("[ ... ]", "[]"))


def test_the_documented_trace_has_the_header_record_writes() -> None:
    documented, written = documented_trace(), json.loads(DEMO_TRACE.read_text())
    # The demo is a single-turn flow: its trace is in the format such a flow is written in.
    assert written["format_version"] == SINGLE_TURN_FORMAT, "re-record the demo (README says how)"
    assert documented["format_version"] == SINGLE_TURN_FORMAT
    assert list(documented) == list(written)
    assert documented["normalized_by_default"] == written["normalized_by_default"]


def test_the_documented_turn_has_the_fields_record_writes() -> None:
    documented, written = documented_trace(), json.loads(DEMO_TRACE.read_text())
    (turn, *_) = documented["lanes"]["model"]
    recorded = written["lanes"]["model"][0]
    assert list(turn) == list(recorded)
    assert turn["dialect"] == recorded["dialect"]
    assert sorted(turn["request"]) == sorted(recorded["request"])

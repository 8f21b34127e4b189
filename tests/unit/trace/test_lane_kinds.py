"""A lane kind is one plugin: a new kind is its own class and nothing else in flowproof."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flowproof.assertions.secrets import Body
from flowproof.assertions.trajectory import ExecutedCall
from flowproof.core.errors import TraceError
from flowproof.engine import lanes
from flowproof.report import render
from flowproof.report.view import McpLaneView, build_view
from flowproof.runrecord.store import parse_run_record
from flowproof.trace import kinds
from flowproof.trace.codec import decode, encode
from flowproof.trace.model import Lane, Trace, Turn
from tests.unit.report.builders import make_flow, make_record


@dataclass(frozen=True)
class Click:
    """A toy browser tool's entry: what was clicked, and whether flowproof faked the page."""

    selector: str
    mocked: bool


@dataclass(frozen=True)
class ClickRow:
    """The toy kind's own timeline row."""

    lane: str
    selector: str


@pytest.fixture
def toy_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[kinds.LaneKind]]:
    """A `browser` lane kind registered for one test only (the registry is restored after)."""
    kinds.known_kinds()
    monkeypatch.setattr(kinds, "_REGISTRY", dict(kinds._REGISTRY))

    class BrowserLane(kinds.LaneKind):
        kind = "browser"

        def encode(self, entry: Click) -> kinds.Document:
            return {"click": entry.selector, "mocked": entry.mocked}

        def decode(self, data: Any, where: str) -> Click:
            entry = kinds.expect(data, dict, where)
            selector = kinds.expect(kinds.field(entry, "click", where), str, f"{where}.click")
            return Click(selector, kinds.expect(entry["mocked"], bool, f"{where}.mocked"))

        def bodies(self, lane: Lane) -> list[Body]:
            return [Body(f"{lane.name} click {n}", e.selector) for n, e in enumerate(lane.entries)]

        def timeline(self, lane: Lane) -> Sequence[Any]:
            return [ClickRow(lane.name, entry.selector) for entry in lane.entries]

        def changes(self, old: Sequence[Any], new: Sequence[Any]) -> list[str]:
            return [] if list(old) == list(new) else ["clicks changed"]

        def lane_view(self, lane: str, rows: Sequence[Any], diverged: bool) -> McpLaneView:
            phrase = f"{lane}: {len(rows)} clicks"
            return McpLaneView(lane, lane.removeprefix("browser."), [], 0, 0, 0, phrase, diverged)

        def executed(self, lane: Lane) -> list[ExecutedCall]:
            server = lane.name.removeprefix("browser.")
            return [
                ExecutedCall(server, "click", {"selector": e.selector}, n, e.mocked)
                for n, e in enumerate(lane.entries, 1)
            ]

    yield BrowserLane


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSE = {"choices": [{"message": {"role": "assistant", "content": "done"}}]}


def _trace() -> Trace:
    model = Lane("model", (Turn("openai_chat", REQUEST, RESPONSE),))
    browser = Lane("browser.chrome", (Click("#buy", False), Click("#confirm", True)))
    return Trace((model, browser), "0.0.0")


def test_a_new_lane_kind_round_trips_through_the_trace_codec(
    toy_kind: type[kinds.LaneKind],
) -> None:
    text = encode(_trace())
    assert '"browser.chrome": [' in text
    assert decode(text, "t.json") == _trace()


def test_a_new_lane_kind_gives_its_trajectory_part_and_timeline_rows(
    toy_kind: type[kinds.LaneKind],
) -> None:
    served = _trace().lanes
    trajectory = lanes.trajectory(served)
    assert trajectory.reply == "done"
    assert [call.name for call in trajectory.executed] == ["chrome/click", "chrome/click"]
    assert [call.mocked for call in trajectory.executed] == [False, True]
    rows: list[Any] = list(lanes.timeline(served))
    assert rows[1:] == [
        ClickRow("browser.chrome", "#buy"),
        ClickRow("browser.chrome", "#confirm"),
    ]
    assert lanes.trace_changes(_trace(), _trace()) == []


def test_a_new_lane_kinds_rows_are_drawn_in_the_report_by_the_kind(
    toy_kind: type[kinds.LaneKind],
) -> None:
    record = parse_run_record(make_record([make_flow()]), "report.json")
    flow = record.flows[0]
    rows = [*flow.timeline, *lanes.timeline(_trace().lanes)[1:]]
    # The toy's rows are registered by no entry of BUILT_IN_KINDS here (the next test shows
    # that registration); copied in unvalidated, they show what the report does with them.
    record = record.model_copy(update={"flows": [flow.model_copy(update={"timeline": rows})]})
    view = build_view(record).flows[0]
    assert [lane.lane for lane in view.mcp_lanes] == ["browser.chrome"]
    assert view.mcp_phrase == "browser.chrome: 2 clicks"
    assert "browser.chrome: 2 clicks" in render.render_html(record)


def test_a_kind_unknown_to_the_registry_is_refused_naming_the_known_ones() -> None:
    text = encode(Trace((Lane("model", ()),), "0.0.0")).replace(
        '"model": []', '"model": [], "browser.chrome": []'
    )
    with pytest.raises(TraceError) as raised:
        decode(text, "t.json")
    assert "(known: model, mcp)" in str(raised.value)


TOY_KIND_MODULE = """
from typing import Any
from flowproof.runrecord.base import LaneRow
from flowproof.trace import kinds

class ClickRow(LaneRow):
    \"\"\"A toy browser lane's timeline row.\"\"\"
    selector: str

class BrowserLane(kinds.LaneKind):
    kind = "browser"

    def lane_view(self, lane: str, rows: Any, diverged: bool) -> Any:
        from flowproof.report.view import McpLaneView
        phrase = f"{lane}: clicked " + ", ".join(row.selector for row in rows)
        return McpLaneView(lane, "chrome", [], 0, 0, 0, phrase, diverged)
"""

REGISTERED_AND_RECORDED = """
import json, sys
from flowproof.trace import kinds
kinds.BUILT_IN_KINDS += (
    kinds.KindRegistration("browser", "toy_browser", rows="toy_browser:ClickRow"),
)
from flowproof.report import render
from flowproof.runrecord.schema import render_schema
from flowproof.runrecord.store import parse_run_record
from toy_browser import ClickRow

record = parse_run_record(json.loads(sys.stdin.read()), "report.json")
rows = record.flows[0].timeline
assert [type(row).__name__ for row in rows] == ["TimelineEntry", "ClickRow"], rows
assert '"ClickRow"' in render_schema()
print(render.render_html(record))
"""


def test_a_kind_with_rows_of_its_own_joins_the_run_record_by_its_registration_alone(
    tmp_path: Path,
) -> None:
    """A kind whose entries have their own run-record rows: its module and one registration
    line, and a run record holding its rows validates, is in the schema and is drawn."""
    (tmp_path / "toy_browser.py").write_text(TOY_KIND_MODULE)
    flow = make_flow()
    row = {"lane": "browser.chrome", "selector": "#buy"}
    flow["timeline"] = [*flow["timeline"][:1], row]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    result = subprocess.run(
        [sys.executable, "-c", REGISTERED_AND_RECORDED],
        input=json.dumps(make_record([flow])),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "browser.chrome: clicked #buy" in result.stdout

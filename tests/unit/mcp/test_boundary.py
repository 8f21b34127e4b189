"""The tool boundary's phase is a side the strategy picks: each builds its own servers."""

from __future__ import annotations

from flowproof.live.traffic import Traffic
from flowproof.mcp.boundary import RecordSide, ReplaySide
from flowproof.mcp.server import RecordingServer, ReplayingServer
from flowproof.outbound.reach import Reach
from flowproof.spec.model import McpServerSpec

SPECS = [McpServerSpec(name="fs", command="fs-server")]


def test_replay_serves_recorded_lanes_and_record_fills_them() -> None:
    replaying = ReplaySide.nothing_recorded().servers(SPECS, Traffic())
    recording = RecordSide({}, {}, Reach()).servers(SPECS, Traffic())
    assert isinstance(replaying["fs"], ReplayingServer)
    assert isinstance(recording["fs"], RecordingServer)


def test_nothing_recorded_answers_every_call_with_a_divergence() -> None:
    traffic = Traffic()
    server = ReplaySide.nothing_recorded().servers(SPECS, traffic)["fs"]
    answer = server.answer({"method": "tools/list", "params": {}})
    assert answer["error"]["code"] == -32603
    assert traffic.divergence is not None and server.arrived == 1
    assert server.unserved_reason() is None

"""The replay-cost table at tiny sizes: real flows, the real proxy, the canned stub and, when its
venv is there, the peer; the JSON has every figure and verdict, and the table is printed.

It never installs the peer (`--tiny` does not): without the venv the peer part is skipped and
the reason is printed, which this test checks instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import peer  # noqa: E402

COST_PARTS = ("startup", "fixed", "per_turn")
TINY_KEYS = {
    "fixed_cpu_ms",
    "per_turn_cpu_ms",
    "single_flow_startup_wall_ms",
    "fixed_cpu_ms_stdlib",
    "per_turn_cpu_ms_stdlib",
    "throughput_1_json",
    "throughput_8_json",
    "throughput_1_stream",
    "throughput_8_stream",
    "throughput_1_json_facts",
    "throughput_8_json_facts",
    "throughput_1_stream_facts",
    "throughput_8_stream_facts",
    "large_load_index_serve_ms",
    "large_peak_rss_mb",
}


def test_the_tiny_replay_table_has_every_figure_and_verdict(tmp_path: Path) -> None:
    results = tmp_path / "table.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            "--tiny",
            "--only",
            "replay-table",
            "--json",
            str(results),
        ],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "PYTHONPATH": str(ROOT),
            # BENCH_PEER_VENV=/nowhere runs the test as on a machine without the peer
            **{k: v for k, v in os.environ.items() if k == "BENCH_PEER_VENV"},
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = json.loads(results.read_text())["replay-table"]
    assert table["mode"] == "tiny" and table["turns"] == [3, 10]
    assert "agent10.py" in table["cost"]["sdk"]["command"]
    assert "-S" in table["cost"]["stdlib"]["command"].split()
    for agent in ("sdk", "stdlib"):
        cost = table["cost"][agent]
        for part in COST_PARTS:
            for measure in ("wall", "cpu"):
                figure = cost[f"{part}_{measure}_ms"]
                assert figure["n"] >= 1 and isinstance(figure["median"], float), (part, figure)
        for turns in (3, 10):
            for count in (1, 2):
                stub = cost[f"stub_{turns}x{count}_cpu_ms"]["median"]
                ours = cost[f"flowproof_{turns}x{count}_cpu_ms"]["median"]
                assert stub > 0 and ours > 0, (agent, turns, count, stub, ours)
                # The same agent processes, plus flowproof's own. Only the stdlib agent starts
                # steadily enough for that to show in one tiny round: the SDK's import alone
                # varies by more than flowproof adds when the machine is busy.
                if agent == "stdlib":
                    assert ours > stub, (agent, turns, count, stub, ours)
    cells = {(c["clients"], c["stream"]) for c in table["throughput"]["cells"]}
    assert cells == {(1, False), (8, False), (1, True), (8, True)}
    assert (
        table["large"]["turns"] == 40 and table["large"]["flowproof"]["peak_rss_mb"]["median"] > 0
    )
    verdicts = {v["key"]: v for v in table["targets"]}
    expected = set(TINY_KEYS)
    if "skipped" in table["peer"]:
        assert table["peer"]["skipped"] in done.stdout and "skipped" in done.stderr
        print(f"peer part skipped: {table['peer']['skipped']}")
    else:
        expected |= {
            f"{prefix}peer_{kind}_ratio" for prefix in ("", "default_") for kind in ("wall", "cpu")
        }
        figures = table["peer"]
        assert figures["pairs"] >= 1 and figures["peer_cpu_ms"]["median"] > 0
        # both engines run the agents the floor runs, and something of their own besides
        for prefix in ("", "default_"):
            added = figures[f"{prefix}flowproof_added_cpu_ms"]["median"]
            assert added > 0 < figures["floor_cpu_ms"]["median"], prefix
    assert set(verdicts) == expected
    for v in verdicts.values():
        assert isinstance(v["met"], bool) and isinstance(v["borderline"], bool), v
        assert isinstance(v["conclusive"], bool), v
        assert abs(v["ratio_to_limit"] - v["measured"] / v["limit"]) < 0.01, v
    assert set(table["measured_again"]) <= {"cost", "throughput", "large", "peer"}
    assert "| target | measured | limit | ratio to limit | verdict |" in done.stdout


def test_a_missing_peer_venv_gives_a_reason(tmp_path: Path) -> None:
    found = peer.find(tmp_path / "no-venv", install=False)
    assert found.binary is None
    assert "not installed" in found.reason and "pip install flowproof==0.23.28" in found.reason


def _verdict(key: str, borderline: bool, conclusive: bool) -> dict[str, object]:
    return {"key": key, "borderline": borderline, "conclusive": conclusive}


def test_a_group_is_measured_again_when_a_figure_is_near_its_limit_or_its_range_spans_it() -> None:
    from bench.replay_table import measure_again

    assert measure_again([_verdict("fixed_cpu_ms", False, True)]) == []
    assert measure_again([_verdict("fixed_cpu_ms", True, True)]) == ["cost"]
    assert measure_again([_verdict("fixed_cpu_ms", False, False)]) == ["cost"]
    both = [_verdict("throughput_8_json", True, True), _verdict("large_peak_rss_mb", False, False)]
    assert measure_again(both) == ["large", "throughput"]

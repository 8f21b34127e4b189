"""`make bench` still runs: bench/run.py at its tiny sizes, on the sections that take seconds.

The sections that run whole flows (flow, suite, profile) record the bench's agent and run it
several times; on a shared 2-core machine that is minutes, not seconds, so they are left to
`make bench-quick` and not run here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_tiny_bench_writes_figures_and_verdicts(tmp_path: Path) -> None:
    results = tmp_path / "bench.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            "--tiny",
            "--only",
            "large,startup",
            "--json",
            str(results),
        ],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(results.read_text())
    assert document["mode"] == "tiny" and document["machine"]["cpus"]
    large = document["large"]
    assert large["turns"] == 40 and large["flowproof"]["serve_ms"] > 0
    assert large["raw"]["peak_rss_mb"] > 0 and [m["turns"] for m in large["matching"]] == [10, 40]
    names = [f["name"] for f in document["startup"]["figures"]]
    assert names[0] == "python -c pass" and "python -m flowproof --version" in names
    targets = {t["target"]: t for t in document["targets"]}
    assert "40-turn trace: peak RSS" in targets
    assert all(isinstance(t["met"], bool) for t in targets.values())
    assert "targets" in done.stdout and "large trace" in done.stdout


def test_the_egress_bench_measures_both_filesystem_loops(tmp_path: Path) -> None:
    from flowproof.containment.fsobserve import COMPILED_LOOP
    from flowproof.containment.probe import capability

    if not capability().contained:
        pytest.skip(f"this host gives {capability().tier}")
    results = tmp_path / "egress.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "egress.py"),
            "--rounds",
            "1",
            "--json",
            str(results),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(results.read_text())
    rm = document["medians"]["rm -rf 5000 files (ms)"]
    assert rm["plain"] > 0 and rm["contained"] > 0, rm
    ratios = document["results"]
    assert ratios["rm -rf 5000 files (ratio)"] > 0, ratios  # one round: a figure, not a verdict
    if COMPILED_LOOP is not None:
        assert rm["contained, Python loop"] > 0
        assert "rm -rf 5000 files, Python loop (ratio)" in ratios

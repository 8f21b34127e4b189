"""Per-flow overhead and suite wall time: whole processes, interleaved.

Per flow, each round runs once, in turn: the agent against the canned stub (the lower bound),
the same agent under `flowproof run` (one flow), vcrpy replaying the loop in one process, and
(every few rounds) one pytest session replaying a handful of flows through vcrpy. The suite
section runs `flowproof run -j 1` and `-j 2` over the same copies of the flow, alternately.
"""

from __future__ import annotations

import math
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.lib.fixtures import AGENT, PROMPT, suite
from bench.lib.measure import PYTHON, ROOT, bench_env, median, run_once, summary
from bench.lib.stub import CannedStub

VCR_AGENT = ROOT / "bench" / "vcr_agent.py"
VCR_SESSION = ROOT / "bench" / "vcr_session"
INPROCESS_SESSION = ROOT / "bench" / "inprocess_session"


def per_flow(recorded: Path, rounds: int, session_flows: int, warmup: int = 1) -> dict[str, Any]:
    trace = recorded / "specs" / "flow.trace.json"
    stub = CannedStub(trace)
    stub.start()
    work = Path(tempfile.mkdtemp(prefix="flowproof-bench-flow-"))
    one = suite(recorded, work / "one", 1)
    cassette = work / "agent10.yaml"
    agent_env = bench_env(
        OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="sk-bench-stub", FLOWPROOF_PROMPT=PROMPT
    )
    run_once([PYTHON, str(VCR_AGENT), str(cassette), "--record"], agent_env)
    commands = {
        "stub": ([PYTHON, str(AGENT)], agent_env, ROOT),
        "flowproof run": ([PYTHON, "-m", "flowproof", "run", "specs"], bench_env(), one),
        "vcrpy, a process per flow": ([PYTHON, str(VCR_AGENT), str(cassette)], agent_env, ROOT),
    }
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    session: list[float] = []
    in_process: list[float] = []
    in_process_env = bench_env(
        BENCH_FLOWPROOF_SPEC=str(recorded / "specs" / "flow.yaml"),
        FLOWPROOF_RUNS_DIR=str(work / "in-process-runs"),
    )
    every = max(1, math.ceil(rounds / 4))
    try:
        for round_ in range(warmup + rounds):
            for name, (command, env, cwd) in commands.items():
                w, c = run_once(command, env, cwd)
                if round_ >= warmup:
                    wall[name].append(w)
                    cpu[name].append(c)
            if round_ >= warmup and (round_ - warmup) % every == 0:
                vcr_env = {**agent_env, "BENCH_VCR_CASSETTE": str(cassette)}
                session += pytest_session(VCR_SESSION, vcr_env, session_flows, work)
                in_process += pytest_session(INPROCESS_SESSION, in_process_env, session_flows, work)
    finally:
        stub.stop()
    floor, cpu_floor = median(wall["stub"]), median(cpu["stub"])
    figures: dict[str, Any] = {}
    for name in commands:
        figures[name] = {
            "wall_ms": summary(wall[name]),
            "cpu_ms": summary(cpu[name]),
            "added_ms": median(wall[name]) - floor,
            "added_cpu_ms": median(cpu[name]) - cpu_floor,
            "ratio": median(wall[name]) / floor,
            "cpu_ratio": median(cpu[name]) / cpu_floor,
        }
    # Paired differences: each round's flowproof run minus the stub run beside it, so drift
    # between rounds cancels.
    paired = [f - s for f, s in zip(wall["flowproof run"], wall["stub"], strict=True)]
    paired_cpu = [f - s for f, s in zip(cpu["flowproof run"], cpu["stub"], strict=True)]
    figures["flowproof run"]["paired_added_ms"] = summary(paired)
    figures["flowproof run"]["paired_added_cpu_ms"] = summary(paired_cpu)
    figures["vcrpy, one pytest session"] = {
        "wall_ms": summary(session),
        "ratio": median(session) / floor,
        "note": "in-session time of one flow (the session's own start-up excluded)",
    }
    figures["flowproof in process, one pytest session"] = {
        "wall_ms": summary(in_process),
        "ratio": median(in_process) / floor,
        "vs_vcrpy_session": median(in_process) / median(session),
        "note": "the flowproof_flow fixture, same sessions' shape as vcrpy's, interleaved",
    }
    return {"rounds": rounds, "turns_per_flow": 10, "figures": figures}


def pytest_session(session: Path, env: dict[str, str], flows: int, work: Path) -> list[float]:
    """One pytest session of `flows` tests (bench/vcr_session or bench/inprocess_session, each
    with its own empty pytest.ini): the in-session milliseconds of each flow but the first,
    which warms the session."""
    times = work / f"{session.name}-times.txt"
    times.unlink(missing_ok=True)
    session_env = {**env, "BENCH_FLOWS": str(flows), "BENCH_TIMES": str(times)}
    done = subprocess.run(
        [
            PYTHON,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            str(session / "pytest.ini"),
            *(str(test) for test in session.glob("test_*.py")),
        ],
        env=session_env,
        cwd=session,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"the {session.name} pytest session failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    samples = [float(line) for line in times.read_text().split()]
    return samples[1:] if len(samples) > 1 else samples


def suite_wall(recorded: Path, flows: int, rounds: int) -> dict[str, Any]:
    """`flowproof run -j 1` and `-j 2` over `flows` copies of the flow, and the agent run
    `flows` times in a row against the canned stub (the floor), in turn each round: the
    per-flow overhead inside a suite, where the engine's start-up is paid once per run."""
    work = Path(tempfile.mkdtemp(prefix="flowproof-bench-suite-"))
    directory = suite(recorded, work / "suite", flows)
    stub = CannedStub(recorded / "specs" / "flow.trace.json")
    stub.start()
    agent_env = bench_env(
        OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="sk-bench-stub", FLOWPROOF_PROMPT=PROMPT
    )
    wall: dict[int, list[float]] = {0: [], 1: [], 2: []}
    cpu: dict[int, list[float]] = {0: [], 1: [], 2: []}
    loads = []
    try:
        for round_ in range(rounds):
            order = (0, 1, 2) if round_ % 2 == 0 else (2, 1, 0)
            for jobs in order:
                if jobs == 0:
                    w, c = _stub_runs(flows, agent_env)
                else:
                    w, c = run_once(
                        [PYTHON, "-m", "flowproof", "run", "-j", str(jobs), "specs"],
                        bench_env(),
                        directory,
                    )
                wall[jobs].append(w)
                cpu[jobs].append(c)
                loads.append(os.getloadavg()[0])
    finally:
        stub.stop()
    ratio = median(wall[2]) / median(wall[1])
    paired = [(j1 - floor) / flows for j1, floor in zip(wall[1], wall[0], strict=True)]
    paired_cpu = [(j1 - floor) / flows for j1, floor in zip(cpu[1], cpu[0], strict=True)]
    return {
        "flows": flows,
        "rounds": rounds,
        "stub_wall_ms": summary(wall[0]),
        "stub_cpu_ms": summary(cpu[0]),
        "j1_wall_ms": summary(wall[1]),
        "j2_wall_ms": summary(wall[2]),
        "j1_cpu_ms": summary(cpu[1]),
        "j2_cpu_ms": summary(cpu[2]),
        "j2_over_j1": ratio,
        "j1_added_ms_per_flow": summary(paired),
        "j1_added_cpu_ms_per_flow": summary(paired_cpu),
        "load_average_1min_after_each": [round(x, 2) for x in loads],
        "at": time.strftime("%H:%M:%S"),
    }


def _stub_runs(flows: int, env: dict[str, str]) -> tuple[float, float]:
    """The agent against the stub `flows` times in a row: total wall and CPU ms."""
    wall = cpu = 0.0
    for _ in range(flows):
        w, c = run_once([PYTHON, str(AGENT)], env, ROOT)
        wall, cpu = wall + w, cpu + c
    return wall, cpu

"""Where the time goes (before anyone optimises): cProfile of the replay proxy per
request, and of one `flowproof run` of the ten-turn flow, with a timeline of that flow (how long
before the agent starts, the agent's own run against the proxy and against the stub, after it
ends) and the engine's imports by package (-X importtime)."""

from __future__ import annotations

import asyncio
import io
import pstats
import re
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.lib.fixtures import AGENT, PROMPT, spec_text, suite
from bench.lib.measure import PYTHON, ROOT, bench_env, median, run_once
from bench.lib.servers import Server
from bench.lib.stub import CannedStub
from bench.lib.wire import drive
from bench.throughput import requests


def top(profile: Path, count: int, calls_of_interest: int, per: int) -> list[dict[str, Any]]:
    """The `count` functions with the most own time, as µs per served request."""
    stats = pstats.Stats(str(profile), stream=io.StringIO())
    rows = []
    for (filename, line, name), (_cc, nc, tt, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = filename.replace(str(ROOT) + "/", "")
        where = re.sub(r".*/site-packages/", "", where)
        where = re.sub(r".*/lib/python3\.\d+/", "", where)
        rows.append(
            {
                "function": f"{where}:{line}({name})",
                "calls": nc,
                "own_us_per_request": tt / per * 1e6,
                "cum_us_per_request": ct / per * 1e6,
            }
        )
    rows.sort(key=lambda r: r["own_us_per_request"], reverse=True)
    cumulative = sorted(rows, key=lambda r: r["cum_us_per_request"], reverse=True)
    wanted = [
        r
        for r in cumulative
        if r["function"].startswith(
            (
                "flowproof/",
                "aiohttp/web_protocol",
                "aiohttp/web_app",
                "aiohttp/web_response",
                "aiohttp/web_request",
                "json/",
            )
        )
    ]
    return rows[:count] + [{"cumulative": True, **r} for r in wanted[:calls_of_interest]]


def proxy(trace: Path, seconds: float, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stream in (False, True):
        target = work / f"proxy-{'stream' if stream else 'json'}.prof"
        server = Server("flowproof", trace, "--per-client", "--profile", str(target))
        cache = {0: requests(trace, 0, stream)}
        result = asyncio.run(drive(server.port, lambda c, cache=cache: cache[c], 1, seconds))
        server.stop()
        served = result["requests"]
        out["stream" if stream else "json"] = {
            "requests": served,
            "per_second_under_profiler": result["per_second"],
            "top": top(target, 18, 14, served),
            "profile": str(target),
        }
    return out


def flow(recorded: Path, work: Path, rounds: int) -> dict[str, Any]:
    """Timeline of one flow: the spec's command stamps the agent's start and end."""
    one = suite(recorded, work / "timeline", 1)
    stamps = work / "stamps.txt"
    spec = one / "specs" / "flow000.yaml"
    text = spec_text("Itinerary 000").replace(
        f'command: "{PYTHON} {AGENT}"',
        f'command: "date +%s.%N >> {stamps}; {PYTHON} {AGENT}; status=$?; '
        f'date +%s.%N >> {stamps}; exit $status"',
    )
    spec.write_text(text)
    stub = CannedStub(recorded / "specs" / "flow.trace.json")
    stub.start()
    agent_env = bench_env(
        OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="sk-bench", FLOWPROOF_PROMPT=PROMPT
    )
    before, agent, after, total, stub_agent = [], [], [], [], []
    try:
        for _ in range(rounds):
            stub_agent.append(run_once([PYTHON, str(AGENT)], agent_env)[0])
            stamps.unlink(missing_ok=True)
            started = time.time()
            run_once([PYTHON, "-m", "flowproof", "run", "specs"], bench_env(), one)
            ended = time.time()
            agent_start, agent_end = (float(x) for x in stamps.read_text().split())
            before.append((agent_start - started) * 1000)
            agent.append((agent_end - agent_start) * 1000)
            after.append((ended - agent_end) * 1000)
            total.append((ended - started) * 1000)
    finally:
        stub.stop()
    profile = work / "flow.prof"
    subprocess.run(
        [PYTHON, "-c", CPU_PROFILED_RUN, str(profile)],
        cwd=one,
        env=bench_env(),
        check=True,
        capture_output=True,
    )
    imports = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "flowproof", "run", "specs"],
        cwd=one,
        env=bench_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    return {
        "rounds": rounds,
        "flowproof_run_wall_ms": median(total),
        "before_agent_starts_ms": median(before),
        "agent_under_flowproof_ms": median(agent),
        "agent_against_stub_ms": median(stub_agent),
        "after_agent_ends_ms": median(after),
        "imports_by_package_ms": imports_by_package(imports.stderr),
        "top_cumulative": flow_top(profile),
        "profile": str(profile),
    }


CPU_PROFILED_RUN = """
import cProfile, runpy, sys, time
profiler = cProfile.Profile(time.process_time)  # CPU time: preemption is not charged
target, sys.argv = sys.argv[1], ["flowproof", "run", "specs"]
profiler.enable()
try:
    runpy.run_module("flowproof", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    assert not stop.code, stop.code
profiler.disable()
profiler.dump_stats(target)
"""


def imports_by_package(report: str) -> dict[str, float]:
    """Self time of every module imported, summed by top-level package (ms)."""
    totals: dict[str, float] = defaultdict(float)
    for line in report.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if match:
            totals[match.group(4).split(".")[0]] += int(match.group(1)) / 1000
    ranked = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)
    return {name: round(ms, 1) for name, ms in ranked[:12]} | {
        "(all)": round(sum(totals.values()), 1)
    }


def flow_top(profile: Path) -> list[dict[str, Any]]:
    stats = pstats.Stats(str(profile), stream=io.StringIO())
    rows = []
    for (filename, line, name), (_cc, nc, tt, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        if name == "<module>":
            continue  # imports: -X importtime tells them apart better (imports_by_package)
        if "flowproof/" in filename and "site-packages" not in filename:
            where = filename.split("flowproof/", 1)[1]
            rows.append(
                {
                    "function": f"flowproof/{where}:{line}({name})",
                    "calls": nc,
                    "cum_ms": ct * 1000,
                    "own_ms": tt * 1000,
                }
            )
    rows.sort(key=lambda r: r["cum_ms"], reverse=True)
    return rows[:25]


def profile(recorded: Path, seconds: float, rounds: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="flowproof-bench-profile-"))
    trace = recorded / "specs" / "flow.trace.json"
    return {"proxy": proxy(trace, seconds, work), "flow": flow(recorded, work, rounds)}

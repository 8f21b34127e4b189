"""`make bench`: every benchmark, one command, JSON plus a table.

    python bench/run.py [--quick] [--tiny] [--only SECTION,...] [--json FILE] [--no-peer-install]

Sections (each a ratio to a baseline measured in the same run, repetitions interleaved):
  flow        per-flow overhead: `flowproof run` of a ten-turn openai-SDK flow vs the same agent
              against a canned stub; vcrpy per process and in one pytest session for reference
  throughput  replayed turns/s, 1/8/32 keep-alive clients, streaming and not, vs a raw
              asyncio canned server (bench/proxy_server.py)
  large       a 1,000-turn trace of 50 KB prompts: load, index, match and serve time, peak RSS
  startup     `flowproof --version` (and the frozen engine) vs `python -c pass` (bench/startup.py)
  suite       40 flows at `flowproof run -j 1` and `-j 2`
  profile     where the time goes: cProfile of the proxy per request and of one flow
  replay-table  the replay-cost table (bench/replay_table.py): start-up, fixed cost per flow
              and per served turn from 10- and 3-turn flows, throughput, the large trace, the
              single-flow start-up, and against the public Rust engine (bench/peer.py), each
              figure against its target; borderline figures measured twice. Markdown to paste.
Default sizes take ~10 minutes on 2 cores; --quick ~2 minutes; --tiny is the smoke test's.
Targets are benchmarks, not tests: the exit code is 0 whether they are met or missed.
"""

from __future__ import annotations

import argparse
import compileall
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.lib.fixtures import record  # noqa: E402
from bench.lib.measure import ROOT, load_average, machine  # noqa: E402

SECTIONS = ("startup", "throughput", "large", "flow", "profile", "suite", "replay-table")
SIZES = {
    #         flow rounds, vcr flows/session, throughput rounds, s/cell, large turns, KB, rounds,
    #         startup runs, suite flows, suite rounds, profile seconds, timeline rounds
    "default": dict(
        flow_rounds=20,
        session_flows=5,
        tp_rounds=3,
        tp_seconds=2.0,
        large_turns=1000,
        large_kb=50,
        large_rounds=3,
        startup_runs=20,
        suite_flows=40,
        suite_rounds=2,
        profile_seconds=3.0,
        timeline_rounds=3,
    ),
    "quick": dict(
        flow_rounds=5,
        session_flows=3,
        tp_rounds=1,
        tp_seconds=0.7,
        large_turns=1000,
        large_kb=50,
        large_rounds=1,
        startup_runs=5,
        suite_flows=8,
        suite_rounds=1,
        profile_seconds=1.0,
        timeline_rounds=1,
    ),
    "tiny": dict(
        flow_rounds=1,
        session_flows=2,
        tp_rounds=1,
        tp_seconds=0.2,
        large_turns=40,
        large_kb=5,
        large_rounds=1,
        startup_runs=1,
        suite_flows=2,
        suite_rounds=1,
        profile_seconds=0.3,
        timeline_rounds=1,
    ),
}
CLIENTS = (1, 8, 32)


def run_sections(
    chosen: list[str], mode: str, partial: Path | None, peer_install: bool = True
) -> dict[str, Any]:
    size, tiny = SIZES[mode], mode == "tiny"
    work = Path(tempfile.mkdtemp(prefix="flowproof-bench-"))
    recorded_at = time.perf_counter()
    needs_recording = set(chosen) & {"throughput", "flow", "suite", "profile"}
    trace = record(work) if needs_recording else None
    results: dict[str, Any] = {"record_ms": (time.perf_counter() - recorded_at) * 1000}
    for name in chosen:
        started = time.perf_counter()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        if name == "startup":
            from bench import startup

            figures = startup.measure(
                startup.commands(None), size["startup_runs"], warmup=0 if tiny else 2
            )
            results[name] = {"figures": [vars(f) | {"over_target": f.over_target} for f in figures]}
        elif name == "throughput":
            from bench.throughput import throughput

            clients = (1, 8) if tiny else CLIENTS
            results[name] = throughput(trace, size["tp_rounds"], size["tp_seconds"], clients)
        elif name == "large":
            from bench.large_trace import large_trace

            lengths = (10, 40) if tiny else (10, 100, 1000)
            results[name] = large_trace(
                size["large_turns"], size["large_kb"], size["large_rounds"], trace, lengths
            )
        elif name == "flow":
            from bench.flows import per_flow

            results[name] = per_flow(
                work, size["flow_rounds"], size["session_flows"], warmup=0 if tiny else 1
            )
        elif name == "suite":
            from bench.flows import suite_wall

            results[name] = suite_wall(work, size["suite_flows"], size["suite_rounds"])
        elif name == "profile":
            from bench.hotspots import profile

            results[name] = profile(work, size["profile_seconds"], size["timeline_rounds"])
        elif name == "replay-table":
            from bench.replay_table import measure

            results[name] = measure(work / "replay-table", mode, peer_install and not tiny)
        results[name]["section_seconds"] = time.perf_counter() - started
        results[name]["load_average_after"] = load_average()
        if partial is not None:  # what is done so far, should a later section fail
            partial.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


def verdicts(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each issue-14 target, met or missed and by how much."""
    out: list[dict[str, Any]] = []

    def add(
        target: str, value: float, limit: float, unit: str, lower_is_better: bool = True
    ) -> None:
        met = value <= limit if lower_is_better else value >= limit
        by = value - limit if lower_is_better else limit - value
        out.append(
            {
                "target": target,
                "measured": round(value, 3),
                "limit": limit,
                "unit": unit,
                "met": met,
                "missed_by": None if met else round(by, 3),
            }
        )

    if "flow" in results:
        figures = results["flow"]["figures"]
        added = figures["flowproof run"]["paired_added_ms"]["median"]
        add("per-flow overhead, a process per flow (median, paired)", added, 15.0, "ms")
        in_process = figures.get("flowproof in process, one pytest session")
        if in_process is not None:
            add(
                "in-process fixture per flow (x vcrpy in one pytest session)",
                in_process["vs_vcrpy_session"],
                1.5,
                "x",
            )
    if "throughput" in results:
        for cell in results["throughput"]["cells"]:
            kind = "streaming" if cell["stream"] else "JSON"
            add(
                f"replay throughput, {cell['clients']} clients, {kind} (x raw)",
                cell["ratio"],
                0.5,
                "x",
                lower_is_better=False,
            )
    if "large" in results:
        large = results["large"]
        add(
            f"{large['turns']}-turn trace: load + index + serve",
            large["flowproof"]["load_index_serve_ms"],
            1000.0,
            "ms",
        )
        add(
            f"{large['turns']}-turn trace: peak RSS", large["flowproof"]["peak_rss_mb"], 300.0, "MB"
        )
        last = large["matching"][-1]
        add(
            f"claim cost at {last['turns']} vs {large['matching'][0]['turns']} turns, in order",
            last["in_order_vs_shortest"],
            1.5,
            "x",
        )
        add(
            f"claim cost at {last['turns']} vs {large['matching'][0]['turns']} turns, reversed",
            last["reverse_vs_shortest"],
            1.5,
            "x",
        )
    if "suite" in results:
        add(
            f"per-flow overhead over the stub inside a {results['suite']['flows']}-flow run "
            "(-j 1, median, paired)",
            results["suite"]["j1_added_ms_per_flow"]["median"],
            15.0,
            "ms",
        )
        add(
            f"{results['suite']['flows']} flows: -j 2 wall / -j 1 wall",
            results["suite"]["j2_over_j1"],
            0.6,
            "x",
        )
    if "startup" in results:
        for figure in results["startup"]["figures"]:
            if figure["target"] is not None:
                add(f"{figure['name']} (x python -c pass)", figure["ratio"], figure["target"], "x")
    for verdict in results.get("replay-table", {}).get("targets", []):
        out.append(
            {k: verdict[k] for k in ("target", "measured", "limit", "unit", "met", "missed_by")}
        )
    return out


def table(results: dict[str, Any]) -> str:
    lines: list[str] = []
    if "flow" in results:
        lines.append("per flow (10 turns)          wall      ratio   cpu       ratio   added")
        for name, f in results["flow"]["figures"].items():
            cpu = f.get("cpu_ms", {}).get("median")
            cpu_text = f"{cpu:8.1f}ms {f['cpu_ratio']:6.2f}x" if cpu is not None else " " * 17
            added = f.get("added_ms")
            lines.append(
                f"  {name:27} {f['wall_ms']['median']:8.1f}ms {f['ratio']:6.2f}x "
                f"{cpu_text} " + (f"{added:+8.1f}ms" if added is not None else "")
            )
        paired = results["flow"]["figures"]["flowproof run"]["paired_added_ms"]["median"]
        lines.append(f"  flowproof run - stub, paired by round: {paired:+.1f} ms wall")
    if "throughput" in results:
        lines.append("throughput (turns/s)         flowproof   raw stub   ratio")
        for c in results["throughput"]["cells"]:
            label = f"{c['clients']:>2} clients, " + ("stream" if c["stream"] else "json")
            lines.append(
                f"  {label:27} {c['flowproof_per_s']:9.0f} {c['raw_per_s']:10.0f} "
                f"{c['ratio']:6.2f}x"
            )
    if "large" in results:
        lg = results["large"]
        fp, raw = lg["flowproof"], lg["raw"]
        lines.append(
            f"large trace ({lg['turns']} turns x {lg['prompt_kb']} KB, "
            f"{lg['trace_mb']:.0f} MB)   flowproof    raw     ratio"
        )
        for key in ("load_ms", "index_ms", "serve_ms", "load_index_serve_ms", "peak_rss_mb"):
            ratio = fp[key] / raw[key] if raw[key] else float("nan")
            lines.append(f"  {key:27} {fp[key]:9.1f} {raw[key]:9.1f} {ratio:7.2f}x")
        lines.append("  matching: turns  claim in order  claim reverse order (us/request)")
        for row in lg["matching"]:
            lines.append(
                f"    {row['turns']:>13} {row['claim_in_order_us']:15.1f} "
                f"{row['claim_reverse_us']:15.1f}"
            )
    if "startup" in results:
        lines.append("start-up                     wall      ratio   cpu       ratio")
        for f in results["startup"]["figures"]:
            lines.append(
                f"  {f['name']:27} {f['median_ms']:8.1f}ms {f['ratio']:6.2f}x "
                f"{f['cpu_median_ms']:8.1f}ms {f['cpu_ratio']:6.2f}x"
            )
    if "suite" in results:
        s = results["suite"]
        lines.append(
            f"suite of {s['flows']} flows: -j 1 {s['j1_wall_ms']['median'] / 1000:.1f} s, "
            f"-j 2 {s['j2_wall_ms']['median'] / 1000:.1f} s, ratio {s['j2_over_j1']:.2f}x; "
            f"the agent {s['flows']} times against the stub "
            f"{s['stub_wall_ms']['median'] / 1000:.1f} s: -j 1 adds "
            f"{s['j1_added_ms_per_flow']['median']:.0f} ms per flow "
            f"({s['j1_added_cpu_ms_per_flow']['median']:.0f} ms CPU)"
        )
    if "profile" in results:
        flow = results["profile"]["flow"]
        lines.append(
            f"one flow's timeline: {flow['before_agent_starts_ms']:.0f} ms before the agent "
            f"starts, agent {flow['agent_under_flowproof_ms']:.0f} ms (vs "
            f"{flow['agent_against_stub_ms']:.0f} ms against the stub), "
            f"{flow['after_agent_ends_ms']:.0f} ms after it ends"
        )
        for kind, p in results["profile"]["proxy"].items():
            lines.append(f"proxy profile ({kind}, CPU us per request, own time):")
            for row in [r for r in p["top"] if not r.get("cumulative")][:8]:
                lines.append(f"  {row['own_us_per_request']:8.1f}  {row['function']}")
    if "replay-table" in results:
        from bench.replay_table import table as replay_table

        lines += ["replay-cost table (Markdown)", "", replay_table(results["replay-table"]), ""]
    lines.append("targets")
    for v in results["targets"]:
        state = "met" if v["met"] else f"MISSED by {v['missed_by']} {v['unit']}"
        lines.append(f"  {v['target']:58} {v['measured']:>10} {v['unit']:3} {state}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a ~2-minute smoke run")
    parser.add_argument("--tiny", action="store_true", help="the smallest sizes (the test's)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--no-peer-install",
        action="store_true",
        help="replay-table: use the peer only if its venv exists (--tiny never installs it)",
    )
    arguments = parser.parse_args()
    chosen = [s for s in arguments.only.split(",") if s]
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    mode = "tiny" if arguments.tiny else "quick" if arguments.quick else "default"
    # An installed flowproof has its bytecode compiled (pip does it); a checkout run with
    # PYTHONDONTWRITEBYTECODE set would otherwise charge compiling every module to every run.
    compileall.compile_dir(ROOT / "flowproof", quiet=1)
    started = time.perf_counter()
    document: dict[str, Any] = {
        "mode": mode,
        "sizes": SIZES[mode],
        "machine": machine(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    partial = arguments.json.with_suffix(".partial.json") if arguments.json else None
    if partial is not None:
        partial.parent.mkdir(parents=True, exist_ok=True)
    document |= run_sections(chosen, mode, partial, not arguments.no_peer_install)
    document["targets"] = verdicts(document)
    document["machine"]["load_average_at_end"] = load_average()
    document["seconds"] = time.perf_counter() - started
    print(table(document))
    print(
        f"bench: {document['seconds']:.0f} s, load average at start "
        f"{document['machine']['load_average_at_start']}, at end "
        f"{document['machine']['load_average_at_end']}",
        file=sys.stderr,
    )
    if arguments.json:
        arguments.json.parent.mkdir(parents=True, exist_ok=True)
        arguments.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        if partial is not None:
            partial.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The replay-cost table: what flowproof adds to an agent's run, split into its parts, each
against its target, and against the best peer (bench/peer.py).

    python bench/run.py --only replay-table [--quick | --tiny] [--json FILE]

Groups of figures, each measured against a baseline taken in the same run, interleaved:

- cost: N flows of the ten-turn openai-SDK agent (bench/agent10.py) in one `flowproof run -j 1`,
  and N flows of the same agent scripted to three turns, and a run of one flow of each; against
  the same agent processes answered by the canned stub (bench/lib/stub.py), the lower bound.
  The same again with the stdlib agent (bench/agent_stdlib.py under `python -S`): the SDK's
  import varies by tens of ms from run to run, which buries a cost of a millisecond per turn;
  the stdlib agent starts in ~20 ms and varies by about one, so its a and b are the precise
  ones (it opens a connection per request, so its per-turn figure is if anything higher).
  CPU is the user + system time of every process of the command (getrusage(RUSAGE_CHILDREN)
  around it). Per round, with added(T, n) = run of n flows of T turns minus n stub runs:
    per-turn cost  b = (added(10, N) - added(3, N)) / (7 N)   (the start-up cancels)
    per flow       f(T) = (added(T, N) - added(T, 1)) / (N - 1)
    fixed per flow a = mean over T of f(T) - b T
    start-up       s = mean over T of added(T, 1) - f(T)     (what a `flowproof run` pays once)
  and the single-flow start-up is added(10, 1) in wall time.
- throughput: bench/throughput.py at 1, 8 and 32 keep-alive clients, as a ratio of the raw stub.
- large: bench/large_trace.py, the 1,000-turn trace of 50 KB prompts.
- peer: 20 flows of a stdlib-only three-turn agent (bench/agent_stdlib.py under `python -S`),
  recorded by each engine, then the peer's `flowproof run DIR` and ours `flowproof run DIR` (one
  flow per CPU at a time, its default) and `flowproof run -j 1 DIR` (one at a time, as the peer)
  in interleaved pairs, both in a loopback-only network namespace.

A figure within 10% of its limit (either side) is measured again: its group runs a second pass
and the samples of both passes are pooled.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.lib.fixtures import AGENT, PROMPT, record, suite
from bench.lib.measure import PYTHON, ROOT, bench_env, load_average, run_tree, spread
from bench.lib.stub import CannedStub

TURNS = (3, 10)
STDLIB_AGENT = ROOT / "bench" / "agent_stdlib.py"
CLIENTS = (1, 8, 32)
BORDERLINE = 0.10


@dataclass(frozen=True)
class Sizes:
    flows: int  # N, flows per `flowproof run` in the cost group, the openai-SDK agent
    stdlib_flows: int  # N for the stdlib agent, whose runs are cheap and steady
    rounds: int
    tp_rounds: int
    tp_seconds: float
    clients: tuple[int, ...]
    large_turns: int
    large_kb: int
    large_rounds: int
    peer_flows: int
    peer_pairs: int


SIZES = {
    "default": Sizes(12, 20, 6, 3, 2.0, CLIENTS, 1000, 50, 3, 20, 9),
    "quick": Sizes(3, 10, 2, 1, 0.7, CLIENTS, 1000, 50, 1, 20, 4),
    "tiny": Sizes(2, 2, 1, 1, 0.2, (1, 8), 40, 5, 1, 3, 1),
}


@dataclass(frozen=True)
class Target:
    key: str
    label: str
    limit: float
    unit: str
    lower_is_better: bool = True


TARGETS = (
    Target("fixed_cpu_ms", "per-flow fixed cost a (CPU), openai-SDK agent", 10.0, "ms"),
    Target("per_turn_cpu_ms", "per served turn b (CPU), openai-SDK agent", 1.0, "ms"),
    Target("fixed_cpu_ms_stdlib", "per-flow fixed cost a (CPU), stdlib agent", 10.0, "ms"),
    Target("per_turn_cpu_ms_stdlib", "per served turn b (CPU), stdlib agent", 1.0, "ms"),
    Target(
        "single_flow_startup_wall_ms", "one-flow `flowproof run` over the stub (wall)", 300.0, "ms"
    ),
    *(
        Target(
            f"throughput_{c}_{kind}",
            f"throughput, {c} client{'s' if c > 1 else ''}, {kind} (x raw)",
            0.5,
            "x",
            False,
        )
        for kind in ("json", "stream")
        for c in CLIENTS
    ),
    *(
        Target(
            f"throughput_{c}_{kind}_facts",
            f"throughput, {c} client{'s' if c > 1 else ''}, {kind}, default facts (x raw)",
            0.5,
            "x",
            False,
        )
        for kind in ("json", "stream")
        for c in CLIENTS
    ),
    Target("large_load_index_serve_ms", "large trace: load + index + serve", 1000.0, "ms"),
    Target("large_peak_rss_mb", "large trace: peak RSS", 300.0, "MB"),
    Target("default_peer_wall_ratio", "ours / peer, wall (`run DIR` of stdlib flows)", 0.8, "x"),
    Target("default_peer_cpu_ratio", "ours / peer, CPU (`run DIR` of stdlib flows)", 0.8, "x"),
    Target("peer_wall_ratio", "ours / peer, wall (`run -j 1 DIR`, one flow at a time)", 0.8, "x"),
    Target("peer_cpu_ratio", "ours / peer, CPU (`run -j 1 DIR`, one flow at a time)", 0.8, "x"),
)
GROUP_OF = {
    "fixed_cpu_ms": "cost",
    "per_turn_cpu_ms": "cost",
    "fixed_cpu_ms_stdlib": "cost",
    "per_turn_cpu_ms_stdlib": "cost",
    "single_flow_startup_wall_ms": "cost",
    "large_load_index_serve_ms": "large",
    "large_peak_rss_mb": "large",
    "peer_wall_ratio": "peer",
    "peer_cpu_ratio": "peer",
    "default_peer_wall_ratio": "peer",
    "default_peer_cpu_ratio": "peer",
}


def _log(message: str) -> None:
    print(f"bench: replay-table: {message}", file=sys.stderr, flush=True)


# --- cost: start-up, fixed per flow, per turn ---------------------------------------------


@dataclass(frozen=True)
class Agent:
    """One agent of the cost group: the same tool loop, with the openai SDK or stdlib only."""

    name: str
    argv: tuple[str, ...]
    flows: int  # N, flows per `flowproof run`

    @property
    def command(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True)
class CostSetup:
    agents: tuple[Agent, ...]
    runs: dict[tuple[str, int, int], Path]  # (agent, turns, flows) -> directory with specs/
    stubs: dict[tuple[str, int], CannedStub]


def agents(sizes: Sizes) -> tuple[Agent, ...]:
    return (
        Agent("sdk", (PYTHON, str(AGENT)), sizes.flows),
        Agent("stdlib", (PYTHON, "-S", str(STDLIB_AGENT)), sizes.stdlib_flows),
    )


def cost_setup(work: Path, sizes: Sizes) -> CostSetup:
    runs: dict[tuple[str, int, int], Path] = {}
    stubs: dict[tuple[str, int], CannedStub] = {}
    chosen = agents(sizes)
    try:
        for agent in chosen:
            for turns in TURNS:
                recorded = work / f"recorded-{agent.name}-{turns}"
                trace = record(recorded, turns, agent.command)
                for count in (1, agent.flows):
                    directory = work / f"run-{agent.name}-{turns}x{count}"
                    runs[(agent.name, turns, count)] = suite(
                        recorded, directory, count, turns, agent.command
                    )
                stubs[(agent.name, turns)] = CannedStub(trace)
                stubs[(agent.name, turns)].start()
    except BaseException:
        for stub in stubs.values():
            stub.stop()
        raise
    return CostSetup(chosen, runs, stubs)


def cost_rounds(setup: CostSetup, rounds: int, first: int) -> list[dict[str, Any]]:
    """Each round runs every cell once: for each agent, turn count and each of 1 and N flows,
    the agent against the stub that many times and `flowproof run -j 1` of that many flows; the
    order of the turn counts and of stub/flowproof alternates from round to round."""
    out = []
    for number in range(first, first + rounds):
        cells: dict[str, Any] = {}
        turn_order = TURNS if number % 2 == 0 else tuple(reversed(TURNS))
        for agent in setup.agents:
            for turns in turn_order:
                stub_env = bench_env(
                    OPENAI_BASE_URL=setup.stubs[(agent.name, turns)].base_url,
                    OPENAI_API_KEY="sk-bench-stub",
                    FLOWPROOF_PROMPT=PROMPT,
                )
                for count in (agent.flows, 1):
                    order = ("stub", "flowproof") if number % 2 == 0 else ("flowproof", "stub")
                    for kind in order:
                        if kind == "stub":
                            wall = cpu = 0.0
                            for _ in range(count):
                                w, c = run_tree(list(agent.argv), stub_env)
                                wall, cpu = wall + w, cpu + c
                        else:
                            wall, cpu = run_tree(
                                [PYTHON, "-m", "flowproof", "run", "-j", "1", "specs"],
                                bench_env(),
                                setup.runs[(agent.name, turns, count)],
                            )
                        cells[f"{agent.name} {kind} {turns}x{count}"] = {
                            "wall_ms": wall,
                            "cpu_ms": cpu,
                        }
        cells["load_average"] = load_average()
        out.append(cells)
        _log(f"cost round {number + 1} done")
    return out


def cost_figures(rounds: list[dict[str, Any]], agent: Agent) -> dict[str, Any]:
    """One agent's figures, each computed per round (paired: drift between rounds cancels),
    then summarised over the rounds."""
    low, high = TURNS
    flows = agent.flows
    series: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        series.setdefault(name, []).append(value)

    for cells in rounds:
        for measure in ("wall", "cpu"):
            key = f"{measure}_ms"

            def cell(
                kind: str, turns: int, count: int, key: str = key, cells: dict[str, Any] = cells
            ) -> float:
                return float(cells[f"{agent.name} {kind} {turns}x{count}"][key])

            def added(turns: int, count: int, cell: Callable[..., float] = cell) -> float:
                return cell("flowproof", turns, count) - cell("stub", turns, count)

            for turns in TURNS:
                for count in (1, flows):
                    add(f"added_{turns}x{count}_{key}", added(turns, count))
                    add(f"stub_{turns}x{count}_{key}", cell("stub", turns, count))
                    add(f"flowproof_{turns}x{count}_{key}", cell("flowproof", turns, count))
            per_turn = (added(high, flows) - added(low, flows)) / ((high - low) * flows)
            per_flow = {t: (added(t, flows) - added(t, 1)) / (flows - 1) for t in TURNS}
            fixed = statistics.fmean(per_flow[t] - per_turn * t for t in TURNS)
            startup = statistics.fmean(added(t, 1) - per_flow[t] for t in TURNS)
            add(f"per_turn_{key}", per_turn)
            add(f"fixed_{key}", fixed)
            add(f"startup_{key}", startup)
            for t in TURNS:
                add(f"per_flow_{t}_{key}", per_flow[t])
        add("single_flow_startup_wall_ms", series[f"added_{high}x1_wall_ms"][-1])
    figures: dict[str, Any] = {name: spread(values) for name, values in series.items()}
    figures["flows"] = flows
    figures["command"] = agent.command
    return figures


# --- throughput and the large trace: the existing sections, pooled over passes -------------


def throughput_pass(trace: Path, sizes: Sizes) -> dict[str, Any]:
    from bench.throughput import throughput

    return throughput(trace, sizes.tp_rounds, sizes.tp_seconds, sizes.clients)


def throughput_figures(passes: list[dict[str, Any]]) -> dict[str, Any]:
    from bench.throughput import cell

    pooled: dict[tuple[int, bool], dict[str, list[float]]] = {}
    for result in passes:
        for measured in result["cells"]:
            into = pooled.setdefault(
                (measured["clients"], measured["stream"]), {"ours": [], "raw": [], "facts": []}
            )
            into["ours"] += measured["flowproof_samples"]
            into["raw"] += measured["raw_samples"]
            into["facts"] += measured.get("facts_samples", [])
    json_first = sorted(pooled.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    cells = [
        cell(clients, stream, samples["ours"], samples["raw"], samples["facts"])
        for (clients, stream), samples in json_first
    ]
    return {"cells": cells, "passes": len(passes)}


def large_pass(sizes: Sizes, trace: Path) -> dict[str, Any]:
    from bench.large_trace import large_trace

    return large_trace(sizes.large_turns, sizes.large_kb, sizes.large_rounds, trace, (10,))


def large_figures(passes: list[dict[str, Any]]) -> dict[str, Any]:
    runs = {name: [r for p in passes for r in p["runs"][name]] for name in ("flowproof", "raw")}
    keys = ("load_ms", "index_ms", "serve_ms", "load_index_serve_ms", "peak_rss_mb")
    return {
        "turns": passes[0]["turns"],
        "prompt_kb": passes[0]["prompt_kb"],
        "trace_mb": passes[0]["trace_mb"],
        "passes": len(passes),
        "flowproof": {k: spread([r[k] for r in runs["flowproof"]]) for k in keys},
        "raw": {k: spread([r[k] for r in runs["raw"]]) for k in keys},
    }


# --- the peer -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeerSetup:
    commands: dict[str, tuple[list[str], dict[str, str], Path]]
    stop: Callable[[], None]
    floor: Callable[[], tuple[float, float]]
    """The agents alone: the suite's flows run one after another against the canned stub."""


def peer_setup(work: Path, sizes: Sizes, install: bool, stub: CannedStub) -> PeerSetup | str:
    """The two engines' commands over their recorded directories, or why the peer is skipped."""
    from bench import peer

    found = peer.find(install=install)
    if found.binary is None:
        return found.reason
    namespace = peer.LoopbackNamespace()
    reason = namespace.start()
    if reason:
        return reason
    try:
        peer.record_both(namespace, found.binary, work / "peer-comparison", sizes.peer_flows, 3)
    except BaseException:
        namespace.stop()
        raise
    stub_env = bench_env(
        OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="sk-bench-stub", FLOWPROOF_PROMPT=PROMPT
    )

    def floor() -> tuple[float, float]:
        wall = cpu = 0.0
        for _ in range(sizes.peer_flows):
            w, c = run_tree([PYTHON, "-S", str(STDLIB_AGENT)], stub_env)
            wall, cpu = wall + w, cpu + c
        return wall, cpu

    return PeerSetup(
        peer.run_commands(namespace, found.binary, work / "peer-comparison"), namespace.stop, floor
    )


def peer_pairs(setup: PeerSetup, pairs: int, first: int, warmup: bool) -> list[dict[str, Any]]:
    """`pairs` pairs, the order inside each pair alternating, each with the agents alone
    against the stub beside it (the floor both engines stand on); one unmeasured pair first."""
    out = []
    names = tuple(setup.commands)
    for number in range(first - (1 if warmup else 0), first + pairs):
        turn = number % len(names)
        order = names[turn:] + names[:turn]  # each command first in turn
        pair: dict[str, Any] = {}
        for name in ("floor", *order) if number % 2 == 0 else (*order, "floor"):
            if name == "floor":
                wall, cpu = setup.floor()
            else:
                command, env, cwd = setup.commands[name]
                wall, cpu = run_tree(command, env, cwd)
            pair[name] = {"wall_ms": wall, "cpu_ms": cpu}
        if number >= first:
            pair["load_average"] = load_average()
            out.append(pair)
    _log(f"peer: {pairs} pairs done")
    return out


OURS = {"flowproof": "", "flowproof-default": "default_"}
"""Our two ways of running the suite, and the prefix of each one's figures: `run -j 1 DIR`
(one flow at a time, as the peer runs a suite) and `run DIR` (one flow per CPU at a time)."""


def peer_figures(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    figures: dict[str, Any] = {"pairs": len(pairs)}
    for key in ("wall_ms", "cpu_ms"):
        theirs = [p["peer"][key] for p in pairs]
        floor = [p["floor"][key] for p in pairs]
        figures[f"peer_{key}"] = spread(theirs)
        figures[f"floor_{key}"] = spread(floor)
        figures[f"peer_added_{key}"] = spread([t - f for t, f in zip(theirs, floor, strict=True)])
        for name, prefix in OURS.items():
            ours = [p[name][key] for p in pairs if name in p]
            if len(ours) != len(pairs):
                continue
            figures[f"{prefix}flowproof_{key}"] = spread(ours)
            figures[f"{prefix}paired_ratio_{key.split('_')[0]}"] = spread(
                [o / t for o, t in zip(ours, theirs, strict=True)]
            )
            figures[f"{prefix}{key.split('_')[0]}_ratio"] = statistics.median(
                ours
            ) / statistics.median(theirs)
            figures[f"{prefix}flowproof_added_{key}"] = spread(
                [o - f for o, f in zip(ours, floor, strict=True)]
            )
        # No engine runs the agents for less than the agents alone cost: the lowest ratio any
        # engine could reach against this peer.
        figures[f"floor_ratio_{key.split('_')[0]}"] = statistics.median(floor) / statistics.median(
            theirs
        )
    return figures


# --- the table ------------------------------------------------------------------------------


def spreads(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-round spread behind each cost target's median."""
    cost = result.get("cost")
    if not cost:
        return {}
    sdk, stdlib = cost["sdk"], cost["stdlib"]
    return {
        "fixed_cpu_ms": sdk["fixed_cpu_ms"],
        "per_turn_cpu_ms": sdk["per_turn_cpu_ms"],
        "fixed_cpu_ms_stdlib": stdlib["fixed_cpu_ms"],
        "per_turn_cpu_ms_stdlib": stdlib["per_turn_cpu_ms"],
        "single_flow_startup_wall_ms": sdk["single_flow_startup_wall_ms"],
    }


def values(result: dict[str, Any]) -> dict[str, float]:
    """Each target's measured value, from the figures."""
    out: dict[str, float] = {key: s["median"] for key, s in spreads(result).items()}
    for cell in result.get("throughput", {}).get("cells", []):
        kind = "stream" if cell["stream"] else "json"
        out[f"throughput_{cell['clients']}_{kind}"] = cell["ratio"]
        if "facts_ratio" in cell:
            out[f"throughput_{cell['clients']}_{kind}_facts"] = cell["facts_ratio"]
    large = result.get("large")
    if large:
        out["large_load_index_serve_ms"] = large["flowproof"]["load_index_serve_ms"]["median"]
        out["large_peak_rss_mb"] = large["flowproof"]["peak_rss_mb"]["median"]
    peer = result.get("peer")
    if peer and "skipped" not in peer:
        for prefix in OURS.values():
            for kind in ("wall", "cpu"):
                if f"{prefix}{kind}_ratio" in peer:
                    out[f"{prefix}peer_{kind}_ratio"] = peer[f"{prefix}{kind}_ratio"]
    return out


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    measured = values(result)
    ranges = spreads(result)
    peer = result.get("peer")
    if peer and "skipped" not in peer:
        for prefix in OURS.values():
            for kind in ("wall", "cpu"):
                if f"{prefix}paired_ratio_{kind}" in peer:
                    ranges[f"{prefix}peer_{kind}_ratio"] = peer[f"{prefix}paired_ratio_{kind}"]
    out = []
    for target in TARGETS:
        if target.key not in measured:
            continue
        value = measured[target.key]
        met = value <= target.limit if target.lower_is_better else value >= target.limit
        out.append(
            {
                "key": target.key,
                "target": target.label,
                "measured": round(value, 3),
                "limit": target.limit,
                "unit": target.unit,
                "lower_is_better": target.lower_is_better,
                "met": met,
                "ratio_to_limit": round(value / target.limit, 3),
                "borderline": abs(value - target.limit) <= BORDERLINE * abs(target.limit),
                "missed_by": None if met else round(abs(value - target.limit), 3),
                # The middle half of the rounds lies on both sides of the limit: the verdict
                # is the median's, and more rounds would be needed to be sure of it.
                "conclusive": not (
                    target.key in ranges
                    and ranges[target.key]["n"] > 1
                    and ranges[target.key]["q1"] <= target.limit <= ranges[target.key]["q3"]
                ),
            }
        )
    return out


def measure_again(verdicts: list[dict[str, Any]]) -> list[str]:
    """The groups to run a second time: those with a figure within `BORDERLINE` of its limit,
    or whose interquartile range spans it. Either way one pass cannot say which side of the
    limit the figure is on; pooled with a second, the median has twice the rounds behind it."""
    return sorted({group(v["key"]) for v in verdicts if v["borderline"] or not v["conclusive"]})


def group(key: str) -> str:
    return GROUP_OF.get(key, "throughput" if key.startswith("throughput_") else key)


def measure(work: Path, mode: str, peer_install: bool) -> dict[str, Any]:
    """Every group once, then a second pass of each group with a figure one pass cannot place
    (`measure_again`)."""
    sizes = SIZES[mode]
    result: dict[str, Any] = {"mode": mode, "sizes": vars(sizes), "turns": list(TURNS)}
    raw: dict[str, list[Any]] = {"cost": [], "throughput": [], "large": [], "peer": []}
    started = time.perf_counter()
    _log(f"recording the {'/'.join(map(str, TURNS))}-turn flows")
    cost = cost_setup(work, sizes)
    trace10 = cost.runs[("sdk", 10, 1)] / "specs" / "flow000.trace.json"
    peer = peer_setup(work, sizes, peer_install, cost.stubs[("stdlib", 3)])
    if isinstance(peer, str):
        _log(f"peer skipped: {peer}")
        result["peer"] = {"skipped": peer}
    try:

        def run_group(name: str, second: bool) -> None:
            _log(f"{name}{' (second pass)' if second else ''}")
            if name == "cost":
                raw["cost"] += cost_rounds(cost, sizes.rounds, len(raw["cost"]))
                result["cost"] = {a.name: cost_figures(raw["cost"], a) for a in cost.agents}
                result["cost"]["rounds"] = raw["cost"]
            elif name == "throughput":
                raw["throughput"].append(throughput_pass(trace10, sizes))
                result["throughput"] = throughput_figures(raw["throughput"])
            elif name == "large":
                raw["large"].append(large_pass(sizes, trace10))
                result["large"] = large_figures(raw["large"])
            elif name == "peer" and not isinstance(peer, str):
                raw["peer"] += peer_pairs(peer, sizes.peer_pairs, len(raw["peer"]), not second)
                result["peer"] = peer_figures(raw["peer"])
                result["peer"]["raw"] = raw["peer"]
                result["peer"]["flows"] = sizes.peer_flows

        for name in ("cost", "throughput", "large", "peer"):
            run_group(name, second=False)
        first = verdicts(result)
        again = measure_again(first)
        result["first_pass"] = first
        result["measured_again"] = again
        for name in again:
            run_group(name, second=True)
    finally:
        for stub in cost.stubs.values():
            stub.stop()
        if not isinstance(peer, str):
            peer.stop()
    result["targets"] = verdicts(result)
    result["seconds"] = time.perf_counter() - started
    return result


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:,.1f}{unit}" if abs(value) < 100 else f"{value:,.0f}{unit}"


def _iqr(s: dict[str, Any], unit: str = " ms") -> str:
    if s["n"] < 2:
        return f"{_fmt(s['median'])}{unit} (1 sample)"
    return f"{_fmt(s['median'])}{unit} ({_fmt(s['q1'])} to {_fmt(s['q3'])}, n={s['n']})"


def table(result: dict[str, Any]) -> str:
    """The section as Markdown, to paste into a dated file in bench/results/."""
    lines: list[str] = []
    cost = result.get("cost")
    if cost:
        lines += _cost_table(cost["sdk"], "the openai-SDK agent (bench/agent10.py)")
        lines += _cost_table(cost["stdlib"], "the stdlib agent (bench/agent_stdlib.py, python -S)")
    tp = result.get("throughput")
    if tp:
        lines += [
            f"**Replay throughput** (turns/s, {result['sizes']['tp_rounds']} rounds x "
            f"{result['sizes']['tp_seconds']} s per cell, {tp['passes']} pass(es))",
            "",
            "| clients | kind | raw stub | flowproof | ratio | with the default facts | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in tp["cells"]:
            kind = "stream" if c["stream"] else "JSON"
            facts = (
                f"{c['facts_per_s']:,.0f} | {c['facts_ratio']:.2f}x"
                if "facts_ratio" in c
                else "n/a | n/a"
            )
            lines.append(
                f"| {c['clients']} | {kind} | {c['raw_per_s']:,.0f} | {c['flowproof_per_s']:,.0f} "
                f"| {c['ratio']:.2f}x | {facts} |"
            )
        lines.append("")
    large = result.get("large")
    if large:
        fp, rw = large["flowproof"], large["raw"]
        lines += [
            f"**Large trace** ({large['turns']} turns x {large['prompt_kb']} KB, "
            f"{large['trace_mb']:.0f} MB): load {_fmt(fp['load_ms']['median'])} + index "
            f"{_fmt(fp['index_ms']['median'])} + serve {_fmt(fp['serve_ms']['median'])} = "
            f"{_fmt(fp['load_index_serve_ms']['median'])} ms (raw server "
            f"{_fmt(rw['load_index_serve_ms']['median'])} ms); peak RSS "
            f"{_fmt(fp['peak_rss_mb']['median'])} MB (raw {_fmt(rw['peak_rss_mb']['median'])} MB)",
            "",
        ]
    peer = result.get("peer")
    if peer and "skipped" in peer:
        lines += [f"**Against the peer**: skipped: {peer['skipped']}", ""]
    elif peer:
        lines += [
            f"**Against the peer** (PyPI `flowproof` 0.23.28; {peer['flows']} three-turn stdlib "
            f"flows per run, {peer['pairs']} interleaved pairs, loopback-only namespace)",
            "",
            "| | agents alone (stub) | peer `run DIR` | ours | ours added (peer added) "
            "| ours / peer (paired, IQR) |",
            "|---|---|---|---|---|---|",
            *(
                f"| {label}, ours `{command}` | {_fmt(peer[f'floor_{key}_ms']['median'])} ms "
                f"| {_fmt(peer[f'peer_{key}_ms']['median'])} ms "
                f"| {_fmt(peer[f'{prefix}flowproof_{key}_ms']['median'])} ms "
                f"| {_fmt(peer[f'{prefix}flowproof_added_{key}_ms']['median'])} ms "
                f"({_fmt(peer[f'peer_added_{key}_ms']['median'])} ms) "
                f"| {peer[f'{prefix}{key}_ratio']:.2f}x "
                f"({_iqr(peer[f'{prefix}paired_ratio_{key}'], 'x')}) |"
                for prefix, command in (("default_", "run DIR"), ("", "run -j 1 DIR"))
                if f"{prefix}wall_ratio" in peer
                for label, key in (("wall", "wall"), ("CPU", "cpu"))
            ),
            "",
            f"The agents alone are {peer['floor_ratio_wall']:.2f}x the peer's wall and "
            f"{peer['floor_ratio_cpu']:.2f}x its CPU: the lowest ratio an engine with no cost "
            "of its own could reach.",
            "",
        ]
    lines += ["| target | measured | limit | ratio to limit | verdict |", "|---|---|---|---|---|"]
    for v in result.get("targets", []):
        sign = "<=" if v["lower_is_better"] else ">="
        verdict = "met" if v["met"] else "**missed**"
        if not v["conclusive"]:
            verdict += ", inconclusive (the interquartile range spans the limit)"
        if v["key"] in _again_keys(result):
            verdict += " (measured twice)"
        lines.append(
            f"| {v['target']} | {v['measured']:g} {v['unit']} | {sign} {v['limit']:g} {v['unit']} "
            f"| {v['ratio_to_limit']:.2f} | {verdict} |"
        )
    return "\n".join(lines)


def _cost_table(cost: dict[str, Any], agent: str) -> list[str]:
    n = cost["flows"]
    lines = [
        f"**Cost over the canned stub, {agent}** (`flowproof run -j 1` of {n} flows and of 1 "
        f"flow against the agent run as often against the stub; {cost['fixed_cpu_ms']['n']} "
        "interleaved rounds; median (interquartile range) of the per-round figures)",
        "",
        "| cell | stub wall | flowproof wall | added wall | added CPU |",
        "|---|---|---|---|---|",
    ]
    for turns in TURNS:
        for count in (n, 1):
            cell = f"{turns}x{count}"
            lines.append(
                f"| {turns} turns x {count} flow{'s' if count > 1 else ''} "
                f"| {_fmt(cost[f'stub_{cell}_wall_ms']['median'])} ms "
                f"| {_fmt(cost[f'flowproof_{cell}_wall_ms']['median'])} ms "
                f"| {_iqr(cost[f'added_{cell}_wall_ms'])} "
                f"| {_iqr(cost[f'added_{cell}_cpu_ms'])} |"
            )
    lines += [
        "",
        "| part | wall | CPU |",
        "|---|---|---|",
        f"| start-up, once per `flowproof run` (s) | {_iqr(cost['startup_wall_ms'])} "
        f"| {_iqr(cost['startup_cpu_ms'])} |",
        f"| fixed per flow (a) | {_iqr(cost['fixed_wall_ms'])} | {_iqr(cost['fixed_cpu_ms'])} |",
        f"| per served turn (b) | {_iqr(cost['per_turn_wall_ms'])} "
        f"| {_iqr(cost['per_turn_cpu_ms'])} |",
        "",
    ]
    return lines


def _again_keys(result: dict[str, Any]) -> set[str]:
    again = set(result.get("measured_again", []))
    return {v["key"] for v in result.get("targets", []) if group(v["key"]) in again}

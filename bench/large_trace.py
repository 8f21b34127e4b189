"""A large trace: 1,000 turns with 50 KB prompts. Load, index, match and serve
time and peak RSS of flowproof's replay proxy, against the raw canned server loading and
serving the same file; and the matcher alone at 10, 100 and 1,000 turns, to show whether
the cost of matching one request depends on the length of the trace."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.lib.servers import Server
from bench.lib.wire import encode_body, encode_request, send_all
from flowproof._version import __version__
from flowproof.matching.exact import request_digest
from flowproof.matching.match import TurnMatcher
from flowproof.trace.codec import encode
from flowproof.trace.model import Trace, Turn

CONTEXT = "The traveller's notes, repeated as a long prompt would be. " * 1000
PATH = "/v1/chat/completions"


def turns(count: int, prompt_kb: int) -> list[Turn]:
    """`count` turns whose requests share a long context and differ at the end, as the
    requests of a long conversation do."""
    context = (CONTEXT * (prompt_kb * 1024 // len(CONTEXT) + 1))[: prompt_kb * 1024]
    out = []
    for i in range(count):
        request = {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a travel assistant."},
                {"role": "user", "content": f"{context}\nQuestion {i:05d}: what is leg {i}?"},
            ],
        }
        response = {
            "id": f"chatcmpl-{i}",
            "object": "chat.completion",
            "created": 1795976105,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "logprobs": None,
                    "message": {
                        "role": "assistant",
                        "content": f"Leg {i} is NBO-{i}.",
                        "refusal": None,
                    },
                }
            ],
            "usage": {"prompt_tokens": 12000, "completion_tokens": 8, "total_tokens": 12008},
        }
        # The digest record keeps of the bytes the bench's client sends (matching/exact.py).
        digest = request_digest("openai_chat", PATH, "", encode_body(request))
        out.append(Turn("openai_chat", request, response, digest))
    return out


def matching_scale(prompt_kb: int, lengths: tuple[int, ...] = (10, 100, 1000)) -> list[dict]:
    """Microseconds per claim, in order (request k takes turn k) and worst case (the requests
    in reverse order: each scans every unconsumed turn before it)."""
    rows = []
    for length in lengths:
        recorded = turns(length, prompt_kb)
        requests = [t.request for t in recorded]
        index_s, in_order, reverse = float("inf"), float("inf"), float("inf")
        repeats, spent = 0, 0.0
        while repeats < 3 or (spent < 0.5 and repeats < 50):  # the best of several passes
            started = time.perf_counter()
            matcher = TurnMatcher(recorded)
            index_s = min(index_s, time.perf_counter() - started)
            started = time.perf_counter()
            for request in requests:
                assert matcher.claim("openai_chat", request) is not None
            in_order = min(in_order, (time.perf_counter() - started) / length)
            matcher = TurnMatcher(recorded)
            started = time.perf_counter()
            for request in reversed(requests):
                assert matcher.claim("openai_chat", request) is not None
            reverse = min(reverse, (time.perf_counter() - started) / length)
            repeats += 1
            spent += in_order * length + reverse * length
        rows.append(
            {
                "turns": length,
                "index_ms": index_s * 1000,
                "claim_in_order_us": in_order * 1e6,
                "claim_reverse_us": reverse * 1e6,
            }
        )
    first = rows[0]
    for row in rows:
        row["in_order_vs_shortest"] = row["claim_in_order_us"] / first["claim_in_order_us"]
        row["reverse_vs_shortest"] = row["claim_reverse_us"] / first["claim_reverse_us"]
    return rows


def large_trace(
    count: int,
    prompt_kb: int,
    rounds: int,
    small_trace: Path | None,
    lengths: tuple[int, ...] = (10, 100, 1000),
) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="flowproof-bench-large-"))
    recorded = turns(count, prompt_kb)
    path = work / "large.trace.json"
    path.write_text(encode(Trace.from_turns(recorded, __version__)), encoding="utf-8")
    sequence = [
        encode_request(PATH, t.request, {"x-bench-turn": str(i)}) for i, t in enumerate(recorded)
    ]
    runs: dict[str, list[dict[str, Any]]] = {"flowproof": [], "raw": []}
    for round_ in range(rounds):
        for name in ("flowproof", "raw") if round_ % 2 == 0 else ("raw", "flowproof"):
            started = time.perf_counter()
            server = Server(name, path)
            ready = time.perf_counter() - started
            serve_s = asyncio.run(send_all(server.port, sequence))
            stopped = server.stop()
            assert stopped["served"] == count, stopped
            runs[name].append(
                {
                    "process_ready_ms": ready * 1000,  # interpreter + imports + load + index
                    "load_ms": server.started["load_ms"],
                    "index_ms": server.started["index_ms"],
                    "serve_ms": serve_s * 1000,
                    "load_index_serve_ms": server.started["load_ms"]
                    + server.started["index_ms"]
                    + serve_s * 1000,
                    "peak_rss_mb": stopped["peak_rss_mb"],
                    "served_exact": stopped.get("served_exact", 0),
                }
            )
    idle_rss = None
    if small_trace is not None:  # the proxy idle over the ten-turn trace: its floor
        idle_rss = Server("flowproof", small_trace).stop()["peak_rss_mb"]

    def best(name: str, key: str) -> float:
        return sorted(r[key] for r in runs[name])[len(runs[name]) // 2]

    keys = (
        "process_ready_ms",
        "load_ms",
        "index_ms",
        "serve_ms",
        "load_index_serve_ms",
        "peak_rss_mb",
    )
    summary = {name: {k: best(name, k) for k in keys} for name in runs}
    return {
        "turns": count,
        "prompt_kb": prompt_kb,
        "trace_mb": path.stat().st_size / 1e6,
        "rounds": rounds,
        "flowproof": summary["flowproof"],
        "raw": summary["raw"],
        "serve_ratio": summary["flowproof"]["serve_ms"] / summary["raw"]["serve_ms"],
        "load_index_serve_ratio": summary["flowproof"]["load_index_serve_ms"]
        / summary["raw"]["load_index_serve_ms"],
        "idle_proxy_peak_rss_mb": idle_rss,
        "runs": runs,
        "matching": matching_scale(prompt_kb, lengths),
    }

"""Replay proxy throughput: replayed turns per second with 1, 8 and 32 concurrent
keep-alive clients, streaming and not, flowproof's replay proxy against the raw-asyncio canned
server, both in processes of their own, driven by the same client (bench/lib/wire.py) in this
one. Rounds interleave: each round measures every (clients, streaming) cell on both servers,
alternating which goes first."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bench.lib.fixtures import recorded_turns
from bench.lib.measure import median
from bench.lib.servers import Server
from bench.lib.wire import drive, encode_request

PATH = "/v1/chat/completions"


def requests(trace: Path, cid: int, stream: bool) -> list[bytes]:
    out = []
    for turn, recorded in enumerate(recorded_turns(trace)):
        body = {**recorded["request"], "stream": True} if stream else recorded["request"]
        headers = {"x-bench-client": str(cid), "x-bench-turn": str(turn)}
        if stream:
            headers["x-bench-stream"] = "1"
        out.append(encode_request(PATH, body, headers))
    return out


def throughput(
    trace: Path, rounds: int, seconds: float, clients: tuple[int, ...]
) -> dict[str, Any]:
    servers = {"flowproof": Server("flowproof", trace, "--per-client"), "raw": Server("raw", trace)}
    cache = {(c, s): requests(trace, c, s) for c in range(max(clients)) for s in (False, True)}
    rates: dict[tuple[str, int, bool], list[float]] = {}
    try:
        for round_ in range(rounds):
            for stream in (False, True):
                for count in clients:
                    order = ("flowproof", "raw") if round_ % 2 == 0 else ("raw", "flowproof")
                    for name in order:
                        result = asyncio.run(
                            drive(
                                servers[name].port,
                                lambda c, s=stream: cache[(c, s)],
                                count,
                                seconds,
                            )
                        )
                        rates.setdefault((name, count, stream), []).append(result["per_second"])
    finally:
        for server in servers.values():
            server.stop()
    cells = []
    for stream in (False, True):
        for count in clients:
            ours = median(rates[("flowproof", count, stream)])
            raw = median(rates[("raw", count, stream)])
            cells.append(
                {
                    "clients": count,
                    "stream": stream,
                    "flowproof_per_s": ours,
                    "raw_per_s": raw,
                    "ratio": ours / raw,
                    "flowproof_samples": [round(r) for r in rates[("flowproof", count, stream)]],
                    "raw_samples": [round(r) for r in rates[("raw", count, stream)]],
                }
            )
    return {"rounds": rounds, "seconds_per_cell": seconds, "cells": cells}

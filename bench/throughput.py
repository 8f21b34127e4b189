"""Replay proxy throughput: replayed turns per second with 1, 8 and 32 concurrent
keep-alive clients, streaming and not, flowproof's replay proxy (normalising nothing, and
normalising the default facts as a flow does) against the raw-asyncio canned server, each in a
process of its own, driven by the same client (bench/lib/wire.py) in this
one. Rounds interleave: each round measures every (clients, streaming) cell on every server,
in an order reversed from one round to the next."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from pathlib import Path
from typing import Any

from bench.lib.fixtures import recorded_turns
from bench.lib.measure import median
from bench.lib.servers import Server
from bench.lib.wire import drive, encode_request

PATH = "/v1/chat/completions"
FACTS = "flowproof-facts"
"""The replay proxy normalising as `flowproof run` of the trace's spec does: the default facts
(working directory, home, temporary directory) of this machine, sought in every request. The
plain `flowproof` server normalises nothing, as a flow that opts out of them does."""
STEADY_MMAP_THRESHOLD = 1 << 20
"""Bytes: allocations under this come from the heap, in the client and in every server.

asyncio's stream client (and the raw stub, which reads with asyncio streams too) reads into a
fresh 256 KiB buffer each time. glibc serves an allocation that size by mmap, with a page fault
per page touched and an munmap when it is freed, until its dynamic threshold happens to rise
past it, which depends on what the process freed before. Measured here, that doubled or halved
the client's CPU per request from one run to the next, and with it the raw stub's figure, the
client being the stub's bottleneck (31,000-37,000 JSON turns/s at 8 clients against
66,000-73,000). A fixed threshold keeps every process of the measurement on the heap."""


def requests(trace: Path, cid: int, stream: bool) -> list[bytes]:
    out = []
    for turn, recorded in enumerate(recorded_turns(trace)):
        body = {**recorded["request"], "stream": True} if stream else recorded["request"]
        headers = {"x-bench-client": str(cid), "x-bench-turn": str(turn)}
        if stream:
            headers["x-bench-stream"] = "1"
        out.append(encode_request(PATH, body, headers))
    return out


def _as_run(trace: Path) -> tuple[str, ...]:
    """The options that have the replay server normalise as `flowproof run` of the trace's
    spec would (the default facts of this machine), when the spec is beside it."""
    spec = trace.with_name(trace.name.removesuffix(".trace.json") + ".yaml")
    return ("--spec", str(spec)) if spec.is_file() else ()


def steady_allocator() -> None:
    """This process's allocator as `STEADY_MMAP_THRESHOLD` says (glibc; elsewhere a no-op)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    mallopt = getattr(ctypes.CDLL(name), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, STEADY_MMAP_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, 4 * STEADY_MMAP_THRESHOLD)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
"""glibc's malloc.h. Setting the mmap threshold fixes the trim threshold too, at 128 KiB: a
freed buffer at the top of the heap would then be given back to the system after each read."""


def throughput(
    trace: Path, rounds: int, seconds: float, clients: tuple[int, ...]
) -> dict[str, Any]:
    steady_allocator()
    steady = {  # (glibc reads them at start)
        "MALLOC_MMAP_THRESHOLD_": str(STEADY_MMAP_THRESHOLD),
        "MALLOC_TRIM_THRESHOLD_": str(4 * STEADY_MMAP_THRESHOLD),
    }
    servers: dict[str, Server] = {}
    rates: dict[tuple[str, int, bool], list[float]] = {}
    try:  # (a server that fails to start stops those started before it)
        servers["flowproof"] = Server("flowproof", trace, "--per-client", env=steady)
        servers["raw"] = Server("raw", trace, env=steady)
        as_run = _as_run(trace)
        if as_run:
            servers[FACTS] = Server("flowproof", trace, "--per-client", *as_run, env=steady)
        cache = {(c, s): requests(trace, c, s) for c in range(max(clients)) for s in (False, True)}
        for round_ in range(rounds):
            for stream in (False, True):
                for count in clients:
                    names = tuple(servers)
                    for name in names if round_ % 2 == 0 else reversed(names):
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
    cells = [
        cell(
            count,
            stream,
            rates[("flowproof", count, stream)],
            rates[("raw", count, stream)],
            rates.get((FACTS, count, stream), []),
        )
        for stream in (False, True)
        for count in clients
    ]
    return {"rounds": rounds, "seconds_per_cell": seconds, "cells": cells}


def cell(
    clients: int, stream: bool, ours: list[float], raw: list[float], facts: list[float]
) -> dict[str, Any]:
    """One (clients, streaming) cell from each server's rates (turns/s): the medians, their
    ratios to the raw stub's, and the samples (whole turns/s). `facts` is empty when the
    default-facts server was not run."""
    found: dict[str, Any] = {
        "clients": clients,
        "stream": stream,
        "flowproof_per_s": median(ours),
        "raw_per_s": median(raw),
        "ratio": median(ours) / median(raw),
        "flowproof_samples": [round(r) for r in ours],
        "raw_samples": [round(r) for r in raw],
    }
    if facts:
        found["facts_per_s"] = median(facts)
        found["facts_ratio"] = median(facts) / median(raw)
        found["facts_samples"] = [round(r) for r in facts]
    return found

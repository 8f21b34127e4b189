"""One server for the proxy benchmarks, in a process of its own so the client's CPU is not its.

    python bench/proxy_server.py flowproof TRACE [--per-client] [--spec SPEC] [--profile FILE]
    python bench/proxy_server.py raw TRACE

`flowproof`: the real replay proxy, `proxy/app.py` make_app around `proxy/replay.py`
ReplayBackend over a `matching/match.py` TurnMatcher, the trace read by `trace/store.py`
load_trace, served by `proxy/app.py` serve (the proxy's own HTTP server, the same code
`flowproof run` starts).
With --per-client each client (header x-bench-client) is one flow: it gets its own
ReplayBackend and matcher over the trace, made afresh once all its turns are served, so a
ten-turn trace can be replayed thousands of times (the cost of the fresh matcher is counted);
the backends share what serving a turn by its bytes works out (`ExactAnswers`), which a real
flow, serving each turn once, works out once per turn.
Without it, one backend serves the trace once, as in a flow. With --spec each backend
normalises as `flowproof run` of that spec would (engine/environment.py `request_rules`: its
declared facts and the default ones the trace was recorded with, measured on this machine, so
every request's bytes are searched for them); without it, nothing is normalised.
`raw`: the canned raw-asyncio server of bench/lib/wire.py with the same answers pre-rendered
(the JSON bytes and the SSE frames flowproof would send), chosen by header x-bench-turn.

Prints one JSON line (port, load and index times) when listening; serves until stdin closes,
then prints one more (peak RSS, requests served).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.lib.wire import (  # noqa: E402
    encode_body,
    header,
    http_chunked,
    http_json,
    serve_canned,
)

PATH = "/v1/chat/completions"
"""Where the bench's client sends every request (bench/throughput.py)."""


def report(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


PROFILER: Any = None
"""With --profile: a cProfile.Profile on CPU time (process_time, so time the process spends
preempted on a shared machine is not charged to whatever it was doing), enabled only while
serving: start-up and imports are not in the per-request figures."""


async def until_stdin_closes() -> None:
    if PROFILER is not None:
        PROFILER.enable()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    if PROFILER is not None:
        PROFILER.disable()


async def flowproof_server(
    trace_path: Path, per_client: bool, spec: Path | None
) -> tuple[int, int]:
    from flowproof.engine.environment import request_rules
    from flowproof.guards.capability import Capability
    from flowproof.live.traffic import Traffic
    from flowproof.matching.match import TurnMatcher
    from flowproof.matching.rules import STRICT
    from flowproof.proxy.app import make_app, serve
    from flowproof.proxy.replay import ExactAnswers, ReplayBackend
    from flowproof.spec.load import load_spec
    from flowproof.trace.store import load_trace

    started = time.perf_counter()
    trace = load_trace(trace_path)
    loaded = time.perf_counter()
    rules = STRICT
    if spec is not None:
        defaults = trace.normalized_by_default
        rules = request_rules(load_spec(spec), None, os.environ, recorded_defaults=defaults)
    turns = trace.turns
    matcher = TurnMatcher(turns)
    indexed = time.perf_counter()
    app_traffic = Traffic()

    # The bench's client sends each recorded request re-encoded (bench/throughput.py), plain
    # or with `"stream": true`: not the bytes the recorded agent sent. Each turn gets the
    # digest record would have kept of those bytes (the recorder's own function), one copy
    # of the trace per way of sending, so replay serves them as it serves an agent's own.
    variants = {
        stream: tuple(_digested(turn, stream) for turn in turns) for stream in (False, True)
    }

    class PerClient:
        """One ReplayBackend per client, renewed once its flow's turns are all served."""

        def __init__(self) -> None:
            self.backends: dict[tuple[str, bool], ReplayBackend] = {}
            self.answers = {stream: ExactAnswers() for stream in (False, True)}
            self.served = 0
            self.served_exact = 0

        def _backend(self, headers: Any) -> ReplayBackend:
            # (`lowered`: the bench's own bookkeeping, kept out of what flowproof is charged)
            cid = headers.lowered("x-bench-client")
            stream = headers.lowered("x-bench-stream") is not None
            backend = self.backends.get((cid, stream))
            if backend is None or backend.matcher.served == len(turns):
                if backend is not None:
                    self.served_exact += backend.served_exact
                matcher = TurnMatcher(variants[stream])
                backend = ReplayBackend(matcher, {}, Traffic(), rules, self.answers[stream])
                self.backends[(cid, stream)] = backend
            if len(app_traffic.requests) > 10_000:
                app_traffic.requests.clear()  # the app's log of arrivals; bounded for the bench
                app_traffic.turns.clear()
            return backend

        def answer_exact(self, dialect: Any, path: str, sent: Any) -> Any:
            served = self._backend(sent.headers).answer_exact(dialect, path, sent)
            self.served += served is not None
            return served

        async def answer(self, call: Any) -> Any:
            self.served += 1
            answer = await self._backend(call.headers).answer(call)
            if answer.status != 200:
                raise RuntimeError(f"bench replay refused: {answer.body}")
            return answer

    backend: Any = PerClient() if per_client else ReplayBackend(matcher, {}, app_traffic, rules)
    capability = Capability(required=False)
    app = make_app(backend, app_traffic, capability)
    runner, port = await serve(app, traffic=app_traffic, capability=capability)
    report(
        port=port,
        load_ms=(loaded - started) * 1000,
        index_ms=(indexed - loaded) * 1000,
        turns=len(turns),
    )
    await until_stdin_closes()
    await runner.cleanup()
    if per_client:
        exact = backend.served_exact + sum(b.served_exact for b in backend.backends.values())
        return backend.served, exact
    return backend.matcher.served, backend.served_exact


def _digested(turn: Any, stream: bool) -> Any:
    from dataclasses import replace

    from flowproof.matching.exact import request_digest

    body = {**turn.request, "stream": True} if stream else turn.request
    digest = request_digest(turn.dialect, PATH, "", encode_body(body))
    return replace(turn, request_sha256=digest)


async def raw_server(trace_path: Path) -> tuple[int, int]:
    from flowproof.dialects.base import dialect_named

    started = time.perf_counter()
    turns = json.loads(trace_path.read_text())["lanes"]["model"]
    answers = []
    for turn in turns:
        response = turn["response"]
        dialect = dialect_named(turn["dialect"])
        assert dialect is not None
        frames = dialect.render_stream({**turn["request"], "stream": True}, response)
        answers.append(
            (http_json(json.dumps(response, ensure_ascii=False).encode()), http_chunked(frames))
        )
    loaded = time.perf_counter()
    served = 0

    def choose(head: bytes, body: bytes) -> bytes:
        nonlocal served
        served += 1
        plain, streamed = answers[int(header(head, b"x-bench-turn") or 0)]
        return streamed if header(head, b"x-bench-stream") else plain

    server = await serve_canned(choose)
    report(
        port=server.sockets[0].getsockname()[1],
        load_ms=(loaded - started) * 1000,
        index_ms=0.0,
        turns=len(turns),
    )
    await until_stdin_closes()
    server.close()
    return served, 0


def main() -> None:
    kind, trace = sys.argv[1], Path(sys.argv[2])
    profile_to = sys.argv[sys.argv.index("--profile") + 1] if "--profile" in sys.argv else None
    global PROFILER
    if profile_to:
        import cProfile

        PROFILER = cProfile.Profile(time.process_time)
    if kind == "flowproof":
        spec = Path(sys.argv[sys.argv.index("--spec") + 1]) if "--spec" in sys.argv else None
        served, exact = asyncio.run(flowproof_server(trace, "--per-client" in sys.argv, spec))
    else:
        served, exact = asyncio.run(raw_server(trace))
    if PROFILER is not None:
        PROFILER.dump_stats(profile_to)
    report(served=served, served_exact=exact, peak_rss_mb=peak_rss_kb() / 1024)


def peak_rss_kb() -> int:
    """This process's peak RSS. VmHWM belongs to the address space exec made, whereas
    getrusage's ru_maxrss carries over the forked parent's pages (a large bench process)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":
    main()

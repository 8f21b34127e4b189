"""Record against upstreams with the providers' real wire habits: compression, keep-alive
bytes, "try again later" answers, refused keys, connections cut mid-answer, and an upstream
that never answers. Real agents on the real `openai` and `anthropic` SDKs, a loopback upstream
that behaves like the provider (`HabitUpstream`, or a gateway in front of a real MCP server),
and the real CLI (through the frozen engine too: `make channels`)."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, web

from flowproof.guards.spellings import appears
from tests import mcp_servers as fx
from tests.conftest import CliResult, agent_command, flowproof
from tests.e2e import booking
from tests.e2e.booking import BOOKING_SCRIPT, KEY, write_spec
from tests.e2e.test_mcp import MOCKED_DELETE, TASK, logged, python_agent, replay
from tests.e2e.test_mcp import record as record_mcp
from tests.e2e.test_mcp import write_spec as write_mcp_spec
from tests.loopback import ThreadedApp
from tests.upstream.scripted import RENDERERS, Received, ScriptedUpstream

pytestmark = pytest.mark.e2e

Habit = Callable[[web.Request, bytes], Awaitable[web.StreamResponse]]
"""How the upstream delivers one answer: given the request and the scripted answer's JSON
bytes (b"" for a habit that refuses instead of answering)."""
REFUSING = "refusing"
"""Marks a habit that answers no scripted step (the step waits for the retry)."""


class HabitUpstream(ScriptedUpstream):
    """The scripted model, with a habit applied to chosen requests (1-based, retries
    counted): a refusing habit answers in place of the script, which then waits for the next
    request; any other habit delivers the scripted answer its own way."""

    def __init__(self, habits: dict[int, Habit] | None = None) -> None:
        super().__init__(script=list(BOOKING_SCRIPT))
        self.habits = habits or {}
        self.every: Habit | None = None
        """A habit for every request the `habits` do not name."""
        self.arrived: list[float] = []
        self.answered = 0
        self.released = threading.Event()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.arrived.append(time.monotonic())
        self.received.append(
            Received(
                request.path, dict(request.headers), body, request.query_string, request.method
            )
        )
        habit = self.habits.get(len(self.received), self.every)
        if habit is not None and getattr(habit, REFUSING, False):
            return await habit(request, b"")
        step = BOOKING_SCRIPT[min(self.answered, len(BOOKING_SCRIPT) - 1)]
        self.answered += 1
        render = next(r for marker, r in RENDERERS if marker in request.path)
        payload = json.dumps(render(step, body, self.answered)).encode()
        if habit is None:
            return web.Response(body=payload, content_type="application/json")
        return await habit(request, payload)


@pytest.fixture
def habits() -> Iterator[HabitUpstream]:
    server = HabitUpstream()
    server.start()
    yield server
    server.released.set()
    server.stop()


def refusing(habit: Habit) -> Habit:
    setattr(habit, REFUSING, True)
    return habit


# The habits, each as a provider's public documentation describes it -------------------------


def encoded(encoding: str, compress: Callable[[bytes], bytes]) -> Habit:
    """Content negotiation (RFC 9110 §12.5.3), as the providers' CDNs do it: the answer is
    compressed with `encoding` when the client's Accept-Encoding lists it, else sent plain."""

    async def answer(request: web.Request, payload: bytes) -> web.StreamResponse:
        asked = [
            part.split(";")[0].strip()
            for part in request.headers.get("Accept-Encoding", "").split(",")
        ]
        if encoding not in asked:
            return web.Response(body=payload, content_type="application/json")
        return web.Response(
            body=compress(payload),
            headers={"Content-Encoding": encoding, "Content-Type": "application/json"},
        )

    return answer


async def brotli_unasked(request: web.Request, payload: bytes) -> web.StreamResponse:
    """A misconfigured gateway that compresses with Brotli whatever the client asked for."""
    return web.Response(
        body=b"\x1b\x00\x00not-really-brotli",
        headers={"Content-Encoding": "br", "Content-Type": "application/json"},
    )


async def whitespace_first(request: web.Request, payload: bytes) -> web.StreamResponse:
    """A gateway holding a long non-streamed completion open: it sends the headers at once
    and whitespace every so often until the JSON is ready (OpenRouter documents this for
    non-streaming requests; JSON allows whitespace before a value, RFC 8259 §2)."""
    reply = web.StreamResponse(headers={"Content-Type": "application/json"})
    reply.enable_chunked_encoding()
    await reply.prepare(request)
    for _ in range(3):
        await reply.write(b"\n")
        await asyncio.sleep(0.2)
    await reply.write(payload)
    await reply.write_eof()
    return reply


def try_later(status: int, retry_after: str, error: dict[str, Any]) -> Habit:
    """A "try again later" answer with Retry-After: OpenAI's 429 rate limit ("requests"
    type, `retry-after` seconds) and 503; Anthropic's 429 `rate_limit_error` and 529
    `overloaded_error`, each with `retry-after` in seconds (Anthropic's errors and rate-limits
    pages)."""

    async def answer(request: web.Request, payload: bytes) -> web.StreamResponse:
        return web.json_response(error, status=status, headers={"retry-after": retry_after})

    return refusing(answer)


OPENAI_RATE_LIMIT = {
    "error": {
        "message": "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
OPENAI_UNAVAILABLE = {
    "error": {"message": "The server is overloaded or not ready yet.", "type": "server_error"}
}
ANTHROPIC_OVERLOADED = {
    "type": "error",
    "error": {"type": "overloaded_error", "message": "Overloaded"},
}


def key_refused(status: int) -> Habit:
    """OpenAI's 401 `invalid_api_key` names the key it was given in its message; this one
    echoes it whole, and JSON-escaped, the worst an upstream can do. Anthropic answers 403
    `permission_error` for a key without access."""

    async def answer(request: web.Request, payload: bytes) -> web.StreamResponse:
        given = request.headers.get("Authorization", "") or request.headers.get("x-api-key", "")
        message = f"Incorrect API key provided: {given} ({json.dumps(given)})"
        error = {"error": {"message": message, "type": "invalid_request_error"}}
        return web.json_response(error, status=status)

    return refusing(answer)


def cut(chunked: bool) -> Habit:
    """A load balancer that drops the connection mid-answer (an idle timeout, a deploy): half
    the body is sent, then the connection closes, short of its Content-Length or without the
    last chunk of a chunked body."""

    async def answer(request: web.Request, payload: bytes) -> web.StreamResponse:
        reply = web.StreamResponse(headers={"Content-Type": "application/json"})
        if chunked:
            reply.enable_chunked_encoding()
        else:
            reply.content_length = len(payload)
        await reply.prepare(request)
        await reply.write(payload[: len(payload) // 2])
        await asyncio.sleep(0.1)
        assert request.transport is not None
        request.transport.close()
        return reply

    return answer


def silent(server: HabitUpstream) -> Habit:
    """An upstream that accepts the request and never answers (a stuck model host)."""

    async def answer(request: web.Request, payload: bytes) -> web.StreamResponse:
        while not server.released.is_set():
            await asyncio.sleep(0.05)
        return web.json_response({"error": {"message": "released"}}, status=500)

    return refusing(answer)


# Helpers --------------------------------------------------------------------------------------


def openai_flow(directory: Path, timeout: float | None = None) -> None:
    write_spec(directory, timeout=timeout)


def anthropic_flow(directory: Path, timeout: float | None = None) -> None:
    write_spec(
        directory,
        command=agent_command("anthropic_agent.py"),
        title="Anthropic booking assistant books a flight",
        timeout=timeout,
    )


def record(directory: Path, upstream: ScriptedUpstream, *extra: str, **env: str) -> CliResult:
    """Record with the shared key variable; the trace is checked to hold no key."""
    if extra:
        environ = {"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY}
        return flowproof("record", "specs", *extra, cwd=directory, env={**environ, **env})
    return booking.record(directory, upstream, **env)


def trace_of(directory: Path) -> dict:
    return json.loads((directory / "specs" / "booking.trace.json").read_text())


def run_record(directory: Path) -> dict:
    (written,) = (directory / ".flowproof" / "runs").glob("*/report.json")
    return json.loads(written.read_text())


def replays(directory: Path) -> None:
    """Replay with the upstream gone: every recorded turn served, none missing."""
    result = flowproof("run", "specs", cwd=directory)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr


# 1. Compression -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "encoding", "compress"),
    [
        ("openai", "gzip", gzip.compress),
        ("anthropic", "gzip", gzip.compress),
        ("openai", "deflate", zlib.compress),
        ("anthropic", "deflate", zlib.compress),
    ],
)
def test_a_compressed_answer_is_stored_decoded_and_served_plain(
    tmp_path: Path,
    habits: HabitUpstream,
    agent: str,
    encoding: str,
    compress: Callable[[bytes], bytes],
) -> None:
    (openai_flow if agent == "openai" else anthropic_flow)(tmp_path)
    habits.every = encoded(encoding, compress)
    result = record(tmp_path, habits)
    assert result.code == 0, result.output
    assert [r.headers.get("Accept-Encoding") for r in habits.received] == ["gzip, deflate"] * 3
    turns = trace_of(tmp_path)["lanes"]["model"]
    assert len(turns) == 3
    assert "B-1042" in json.dumps(turns[2]["response"])  # plain JSON, not compressed bytes
    habits.stop()
    replays(tmp_path)


def test_brotli_is_never_asked_for_and_an_answer_in_it_fails_by_name(
    tmp_path: Path, habits: HabitUpstream
) -> None:
    """flowproof advertises only what it decodes: a well-behaved server never picks br; a
    gateway that sends it anyway fails the record, saying which encoding, at which turn."""
    openai_flow(tmp_path)
    habits.every = encoded("br", lambda payload: b"never sent")
    assert record(tmp_path, habits).code == 0
    assert "br" not in habits.received[0].headers["Accept-Encoding"]

    unasked = tmp_path / "unasked"
    openai_flow(unasked)
    habits.received.clear()
    habits.every = brotli_unasked
    result = record(unasked, habits)
    assert result.code == 1, result.output
    assert (
        "answered turn 1 (model request 1) in a compression flowproof could not decode "
        "(Content-Encoding brotli (br)), though flowproof asks for gzip, deflate or none"
    ) in result.stderr
    assert not (unasked / "specs" / "booking.trace.json").exists()
    assert len(habits.received) == 1  # the agent was told not to retry


# 2. Keep-alives -------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["openai", "anthropic"])
def test_whitespace_before_a_non_streamed_answer_is_read(
    tmp_path: Path, habits: HabitUpstream, agent: str
) -> None:
    (openai_flow if agent == "openai" else anthropic_flow)(tmp_path)
    habits.every = whitespace_first
    result = record(tmp_path, habits)
    assert result.code == 0, result.output
    assert len(trace_of(tmp_path)["lanes"]["model"]) == 3
    habits.stop()
    replays(tmp_path)


KEEP_ALIVE = b": keep-alive\n\n"
PING = b'event: ping\ndata: {"type": "ping"}\n\n'


class KeepAliveGateway:
    """A gateway in front of a real streamable-HTTP MCP server (the `mcp` SDK's, which answers
    each POST with an SSE stream): it passes every byte through, and adds what gateways and
    servers send to keep a quiet stream open, an SSE comment (`: keep-alive`, the keep-alive
    the SSE standard suggests) and an event of its own type (`event: ping`), before and after
    each event the server sends."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.added = 0
        self._app = ThreadedApp("keep-alive-gateway", self._routes)
        self.port = 0

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self._pass)

    async def _pass(self, request: web.Request) -> web.StreamResponse:
        headers = {
            name: value
            for name, value in request.headers.items()
            if name.lower() not in ("host", "content-length", "transfer-encoding")
        }
        async with (
            ClientSession() as session,
            session.request(
                request.method, self.target, data=await request.read(), headers=headers
            ) as upstream,
        ):
            kept = {
                name: value
                for name, value in upstream.headers.items()
                if name.lower() not in ("content-length", "transfer-encoding", "content-encoding")
            }
            reply = web.StreamResponse(status=upstream.status, headers=kept)
            await reply.prepare(request)
            sse = "text/event-stream" in upstream.headers.get("Content-Type", "")
            if sse:
                await reply.write(KEEP_ALIVE + PING)
                self.added += 2
            async for line in upstream.content:
                await reply.write(line)
                if sse and line in (b"\n", b"\r\n"):
                    await reply.write(KEEP_ALIVE + PING)
                    self.added += 2
            await reply.write_eof()
            return reply

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> KeepAliveGateway:
        self.port = self._app.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._app.stop()


def test_keep_alives_in_a_real_mcp_servers_sse_stream_pass_through_and_are_not_stored(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    with (
        fx.http_server(lambda port: fx.tools_server_argv(log=log, http=port)) as server,
        KeepAliveGateway(server.url) as gateway,
    ):
        write_mcp_spec(
            tmp_path, python_agent("classic"), f"url: {gateway.url}", TASK, tools=MOCKED_DELETE
        )
        recorded = record_mcp(tmp_path)
        assert recorded.code == 0, recorded.output
    assert gateway.added > 4
    assert [entry["tool"] for entry in logged(log)] == ["echo", "add"]
    trace = (tmp_path / "specs" / "mcp.trace.json").read_text()
    assert '"ping"' not in trace and "keep-alive" not in trace
    assert replay(tmp_path).code == 0


# 3. Try again later ---------------------------------------------------------------------------


def test_rate_limits_are_retried_by_the_sdk_and_only_the_answers_are_kept(
    tmp_path: Path, habits: HabitUpstream
) -> None:
    openai_flow(tmp_path)
    habits.habits = {
        1: try_later(429, "1", OPENAI_RATE_LIMIT),
        3: try_later(503, "1", OPENAI_UNAVAILABLE),
        4: try_later(503, "1", OPENAI_UNAVAILABLE),
    }
    result = record(tmp_path, habits)
    assert result.code == 0, result.output
    assert len(habits.received) == 6  # 3 answered, 3 refused and retried
    # The SDK waited as Retry-After asked (its own first back-off is at most 0.5 s).
    assert habits.arrived[1] - habits.arrived[0] >= 0.9
    assert len(trace_of(tmp_path)["lanes"]["model"]) == 3
    notes = run_record(tmp_path)["flows"][0]["notes"]
    assert notes == [
        "turn 1 (model request 1): the upstream answered 429 Too Many Requests to 1 attempt, "
        "asking to wait 1 s; the agent retried and was answered. The trace keeps only the "
        "answer, so replay serves it at once",
        "turn 2 (model request 3): the upstream answered 503 Service Unavailable (x2) to 2 "
        "attempts, asking to wait 2 s in all; the agent retried and was answered. The trace "
        "keeps only the answer, so replay serves it at once",
    ]
    assert f"note: {notes[0]}" in result.stderr
    habits.stop()
    started = time.monotonic()
    replays(tmp_path)
    assert time.monotonic() - started < 30  # generous for a loaded machine; no back-off


def test_anthropic_overloaded_529_is_retried_by_the_sdk(
    tmp_path: Path, habits: HabitUpstream
) -> None:
    anthropic_flow(tmp_path)
    habits.habits = {2: try_later(529, "1", ANTHROPIC_OVERLOADED)}
    result = record(tmp_path, habits)
    assert result.code == 0, result.output
    assert len(habits.received) == 4
    assert habits.arrived[2] - habits.arrived[1] >= 0.9
    assert "529 Overloaded to 1 attempt, asking to wait 1 s" in result.stderr
    assert len(trace_of(tmp_path)["lanes"]["model"]) == 3
    habits.stop()
    replays(tmp_path)


def test_retries_exhausted_fail_the_record_naming_the_status(
    tmp_path: Path, habits: HabitUpstream
) -> None:
    openai_flow(tmp_path)
    habits.every = try_later(429, "1", OPENAI_RATE_LIMIT)
    result = record(tmp_path, habits)
    assert result.code == 1, result.output
    assert len(habits.received) == 3  # the openai SDK's first try and its two retries
    assert (
        "turn 1 (model request 1): the upstream answered 429 Too Many Requests (x3) to 3 "
        "attempts, asking to wait 3 s in all, and the agent stopped retrying" in result.stderr
    )
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


# 4. A refused key -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "status", "variable"),
    [("openai", 401, "FLOWPROOF_AGENT_KEY"), ("anthropic", 403, "ANTHROPIC_API_KEY")],
)
def test_a_refused_key_fails_naming_the_variable_never_the_key(
    tmp_path: Path, habits: HabitUpstream, agent: str, status: int, variable: str
) -> None:
    (openai_flow if agent == "openai" else anthropic_flow)(tmp_path)
    habits.every = key_refused(status)
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": habits.base_url, variable: KEY},
    )
    assert result.code == 1, result.output
    named = {401: "401 Unauthorized", 403: "403 Forbidden"}[status]
    assert f"refused the key ({named}) at turn 1 (model request 1)" in result.stderr
    assert f"check {variable} in flowproof's environment" in result.stderr
    assert len(habits.received) == 1
    assert KEY in json.dumps(habits.received[0].headers)  # the key was sent, and echoed
    assert not (tmp_path / "specs" / "booking.trace.json").exists()
    written = [p.read_text() for p in (tmp_path / ".flowproof").rglob("*") if p.is_file()]
    for text in [result.output, *written]:
        assert not appears(KEY, text)


# 5. An answer cut mid-way ---------------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("agent", ["openai", "anthropic"])
def test_an_answer_cut_mid_way_fails_the_flow_naming_the_turn(
    tmp_path: Path, habits: HabitUpstream, agent: str, chunked: bool
) -> None:
    (openai_flow if agent == "openai" else anthropic_flow)(tmp_path)
    habits.habits = {2: cut(chunked)}
    started = time.monotonic()
    result = record(tmp_path, habits)
    assert time.monotonic() - started < 60
    assert result.code == 1, result.output
    assert (
        "closed the connection before its answer was complete, at turn 2 (model request 2)"
        in result.stderr
    )
    assert len(habits.received) == 2  # the agent was told not to retry
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


# 6. An upstream that never answers ------------------------------------------------------------


def test_an_upstream_that_never_answers_fails_after_the_upstream_timeout(
    tmp_path: Path, habits: HabitUpstream
) -> None:
    openai_flow(tmp_path)
    habits.habits = {2: silent(habits)}
    started = time.monotonic()
    result = record(tmp_path, habits, "--upstream-timeout", "2")
    took = time.monotonic() - started
    assert result.code == 1, result.output
    assert "did not answer turn 2 (model request 2) within 2 s" in result.stderr
    assert "flowproof record --upstream-timeout SECONDS" in result.stderr
    assert 2 <= took < 60
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


def test_the_agents_own_timeout_still_applies(tmp_path: Path, habits: HabitUpstream) -> None:
    openai_flow(tmp_path, timeout=3)
    habits.habits = {1: silent(habits)}
    started = time.monotonic()
    result = record(tmp_path, habits)
    assert time.monotonic() - started < 60
    assert result.code == 1, result.output
    assert "the agent was still running after its timeout of 3s" in result.stderr


def test_the_upstream_timeout_must_be_a_positive_number(tmp_path: Path) -> None:
    openai_flow(tmp_path)
    result = flowproof("record", "specs", "--upstream-timeout", "0", cwd=tmp_path)
    assert result.code == 2
    assert "--upstream-timeout" in result.stderr


# 7. An upstream URL without /v1, and an upstream that is not running ---------------------------


async def not_found_empty(request: web.Request, payload: bytes) -> web.StreamResponse:
    """A server whose API lives under /v1 (as OpenAI-compatible and Anthropic servers' does),
    asked for a path outside it: 404 with nothing in the body."""
    return web.Response(status=404)


@pytest.mark.parametrize("agent", ["openai", "anthropic"])
def test_a_404_with_an_empty_body_names_the_request_and_the_missing_v1(
    tmp_path: Path, habits: HabitUpstream, agent: str
) -> None:
    (openai_flow if agent == "openai" else anthropic_flow)(tmp_path)
    habits.every = refusing(not_found_empty)
    origin = habits.base_url.removesuffix("/v1")
    path = {"openai": "/chat/completions", "anthropic": "/messages"}[agent]
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": origin, "FLOWPROOF_AGENT_KEY": KEY},
    )
    assert result.code == 1, result.output
    assert habits.received[0].path == path  # what was asked: the API path with no /v1
    assert (
        f"the upstream answered 404 Not Found to POST {origin}{path} at turn 1 (model request 1):"
        " (an empty body); the upstream URL usually ends in /v1: "
        f"set FLOWPROOF_AGENT_UPSTREAM={origin}/v1"
    ) in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


@pytest.mark.parametrize("agent", ["openai", "anthropic"])
def test_an_upstream_that_is_not_running_is_named_as_a_refused_connection(
    tmp_path: Path, agent: str
) -> None:
    (openai_flow if agent == "openai" else anthropic_flow)(tmp_path)
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = f"http://127.0.0.1:{port}/v1"
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream, "FLOWPROOF_AGENT_KEY": KEY},
    )
    assert result.code == 1, result.output
    assert f"connection refused: is the upstream running at http://127.0.0.1:{port}?" in (
        result.stderr
    )
    assert "ssl:default" not in result.output
    assert not (tmp_path / "specs" / "booking.trace.json").exists()

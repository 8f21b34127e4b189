"""The proxy app, driven over a real loopback socket by aiohttp's client."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from flowproof.guards.capability import Capability
from flowproof.live.traffic import Refused, Traffic
from flowproof.matching.match import TurnMatcher
from flowproof.proxy.app import MALFORMED, make_app, serve
from flowproof.proxy.replay import ReplayBackend
from flowproof.trace.model import Turn

CAPABILITY = Capability(
    token="ksCPVQvrqKZNWac5grzArDO3"
)  # fixed: test ids must agree across workers
PREFIX = CAPABILITY.prefix
"""Every request of these tests is sent the way the agent sends it, with the capability."""
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSE = {
    "id": "x",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hello"}}
    ],
}


async def exchange(*bodies: dict, path: str = "/v1/chat/completions") -> tuple[list, Traffic]:
    traffic = Traffic()
    backend = ReplayBackend(TurnMatcher((Turn("openai_chat", REQUEST, RESPONSE),)), {}, traffic)
    runner, port = await serve(
        make_app(backend, traffic, CAPABILITY), traffic=traffic, capability=CAPABILITY
    )
    replies = []
    try:
        async with aiohttp.ClientSession() as client:
            for body in bodies:
                async with client.post(
                    f"http://127.0.0.1:{port}{PREFIX}{path}",
                    json=body,
                    headers={"Accept": "application/json"},
                ) as reply:
                    replies.append((reply.status, dict(reply.headers), await reply.text()))
    finally:
        await runner.cleanup()
    return replies, traffic


def test_binds_loopback_and_serves_the_recorded_turn() -> None:
    replies, traffic = asyncio.run(exchange(REQUEST))
    assert replies[0][0] == 200 and json.loads(replies[0][2]) == RESPONSE
    assert traffic.requests == [("POST", "/v1/chat/completions", "openai_chat")]


def test_divergence_is_a_4xx_that_tells_the_sdk_not_to_retry() -> None:
    changed = {**REQUEST, "model": "other"}
    replies, traffic = asyncio.run(exchange(changed, REQUEST))
    status, headers, body = replies[0]
    assert status == 400 and headers["x-should-retry"] == "false"
    assert "flowproof replay divergence" in json.loads(body)["error"]["message"]
    # fail fast: once diverged, even a matching request is refused
    assert replies[1][0] == 400
    assert traffic.divergence is not None and traffic.divergence.index == 1


def test_streaming_is_decided_by_the_body_not_the_accept_header() -> None:
    replies, _ = asyncio.run(exchange({**REQUEST, "stream": True}))
    status, headers, body = replies[0]
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    assert body.rstrip().endswith("data: [DONE]")


async def send_raw(
    method: str, path: str, data: bytes | None
) -> tuple[tuple[int, dict, str], Traffic]:
    """One request the way a client outside any SDK sends it, then the served turn."""
    traffic = Traffic()
    backend = ReplayBackend(TurnMatcher((Turn("openai_chat", REQUEST, RESPONSE),)), {}, traffic)
    runner, port = await serve(
        make_app(backend, traffic, CAPABILITY), traffic=traffic, capability=CAPABILITY
    )
    try:
        async with aiohttp.ClientSession() as client:
            async with client.request(
                method, f"http://127.0.0.1:{port}{PREFIX}{path}", data=data
            ) as reply:
                answered = (reply.status, dict(reply.headers), await reply.text())
            async with client.post(
                f"http://127.0.0.1:{port}{PREFIX}/v1/chat/completions", json=REQUEST
            ) as again:
                assert again.status == 400  # the flow has failed: nothing more is served
    finally:
        await runner.cleanup()
    return answered, traffic


@pytest.mark.parametrize(
    ("method", "path", "data", "status", "why"),
    [
        ("POST", "/v1/chat/completions", b"model=m&prompt=hi", 400, "the request body is not JSON"),
        ("POST", "/v1/chat/completions", b"", 400, "the request body is empty"),
        (
            "POST",
            "/v1/chat/completions",
            b"[1, 2]",
            400,
            "the request body is JSON but not an object",
        ),
        (
            "POST",
            "/v1/embeddings",
            b"{}",
            404,
            "no model API at /v1/embeddings; paths containing /api/chat, /chat/completions, "
            "/messages, /models/<model>:generateContent, /responses are served",
        ),
        ("GET", "/v1/chat/completions", None, 405, "GET is not a model call; use POST"),
    ],
)
def test_an_unservable_request_is_answered_4xx_and_fails_the_flow(
    method: str, path: str, data: bytes | None, status: int, why: str
) -> None:
    (answered, headers, body), traffic = asyncio.run(send_raw(method, path, data))
    assert answered == status and headers["x-should-retry"] == "false"
    assert json.loads(body) == {
        "error": {"message": f"flowproof: {why}", "type": "flowproof_error"}
    }
    assert traffic.refused == [Refused(1, method, path, status, why)]
    assert traffic.failures == [f"request 1 could not be served ({status}): {method} {path}: {why}"]
    assert traffic.turns == []  # the later request was refused, not served
    assert traffic.fatal.is_set()  # like a divergence: the driver stops the agent


async def send_malformed(raw: bytes, prefix: str = PREFIX) -> tuple[bytes, int, Traffic]:
    """Bytes no HTTP client library would send, over a raw socket, its path behind `prefix`;
    then the agent's own well-formed request: the first answer, the second's status."""
    traffic = Traffic()
    backend = ReplayBackend(TurnMatcher((Turn("openai_chat", REQUEST, RESPONSE),)), {}, traffic)
    app = make_app(backend, traffic, CAPABILITY)
    runner, port = await serve(app, traffic=traffic, capability=CAPABILITY)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(raw.replace(b"POST /", f"POST {prefix}/".encode(), 1))
        answered = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        async with aiohttp.ClientSession() as client:
            url = f"http://127.0.0.1:{port}{PREFIX}/v1/chat/completions"
            async with client.post(url, json=REQUEST) as again:
                then = again.status
    finally:
        await runner.cleanup()
    return answered, then, traffic


@pytest.mark.parametrize(
    ("raw", "status", "why"),
    [
        (
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
            "the request has both Content-Length and Transfer-Encoding; send one of them",
        ),
        (
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"0x2\r\n{}\r\n0\r\n\r\n",
            400,
            "not a chunk-size line (hex digits only): '0x2'",
        ),
    ],
)
def test_a_request_the_http_server_refuses_fails_the_flow(
    raw: bytes, status: int, why: str
) -> None:
    answered, then, traffic = asyncio.run(send_malformed(raw))
    assert answered.startswith(b"HTTP/1.1 %d " % status)
    path = "/v1/chat/completions"  # the capability taken off, as from every path written down
    assert traffic.requests[0] == ("POST", path, MALFORMED)
    assert traffic.refused == [Refused(1, "POST", path, status, why)]
    assert traffic.failures[0] == f"request 1 could not be served ({status}): POST {path}: {why}"
    assert traffic.turns == [] and traffic.fatal.is_set()
    assert then == 400  # the flow has failed: nothing more is served


def test_a_malformed_request_without_the_capability_is_an_outsiders_and_fails_nothing() -> None:
    """A stranger cannot fail a record by sending garbage to the port: it is only counted."""
    smuggled = (
        b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    )
    answered, then, traffic = asyncio.run(send_malformed(smuggled, prefix=""))
    assert answered.startswith(b"HTTP/1.1 400 ")
    assert traffic.outsiders == [("POST", "/v1/chat/completions")]
    assert traffic.refused == [] and traffic.failures == [] and not traffic.fatal.is_set()
    assert then == 200 and len(traffic.turns) == 1  # the agent is still served


def test_unknown_path_is_a_named_404() -> None:
    replies, traffic = asyncio.run(exchange(REQUEST, path="/v1/embeddings"))
    assert replies[0][0] == 404
    assert "no model API at /v1/embeddings; paths containing " in replies[0][2]
    assert "/chat/completions" in replies[0][2]
    assert traffic.requests == [("POST", "/v1/embeddings", "?")]


async def upgrade(path: str) -> tuple[int, dict[str, str], str, Traffic]:
    """A WebSocket handshake the way Codex CLI opens its Responses WebSocket transport."""
    traffic = Traffic()
    backend = ReplayBackend(TurnMatcher(()), {}, traffic)
    runner, port = await serve(
        make_app(backend, traffic, CAPABILITY), traffic=traffic, capability=CAPABILITY
    )
    try:
        async with aiohttp.ClientSession() as client:
            async with client.get(
                f"http://127.0.0.1:{port}{PREFIX}{path}",
                headers={
                    "Connection": "Upgrade",
                    "Upgrade": "websocket",
                    "Sec-WebSocket-Version": "13",
                    "Sec-WebSocket-Key": "3MkRW7I1SaA/zKQE115eRQ==",
                    "openai-beta": "responses_websockets=2026-02-06",
                },
            ) as reply:
                return reply.status, dict(reply.headers), await reply.text(), traffic
    finally:
        await runner.cleanup()


def test_a_websocket_upgrade_on_a_model_path_is_426_and_not_a_failure() -> None:
    """426 is what Codex CLI takes as "use HTTP" at once (a 404 or 405 it retries seven
    times); the attempt is counted for doctor but does not fail the flow."""
    status, headers, body, traffic = asyncio.run(upgrade("/v1/responses"))
    assert status == 426 and headers["x-should-retry"] == "false"
    assert json.loads(body)["error"]["message"] == (
        "flowproof: model calls are recorded and replayed over HTTP; use HTTP, not WebSocket"
    )
    assert traffic.requests == [("GET", "/v1/responses", "websocket")]
    assert traffic.refused == [] and traffic.failures == [] and not traffic.fatal.is_set()


def test_a_websocket_upgrade_elsewhere_is_the_named_404() -> None:
    status, _, body, traffic = asyncio.run(upgrade("/v1/realtime"))
    assert status == 404 and "no model API at /v1/realtime" in body
    assert traffic.requests == [("GET", "/v1/realtime", "?")]


def test_record_forwards_provider_headers_by_prefix_and_no_credential() -> None:
    from multidict import CIMultiDict

    from flowproof.dialects import dialect_named
    from flowproof.proxy.forward import Upstream

    incoming = CIMultiDict(
        [
            ("Anthropic-Beta", "tools-2024"),
            ("anthropic-beta", "context-1m"),
            ("anthropic-version", "2023-06-01"),
            ("OpenAI-Beta", "responses=experimental"),
            ("openai-organization", "org-1"),
            ("openai-project", "proj-1"),
            ("openai-api-key", "sk-agent"),
            ("x-api-key", "flowproof-placeholder-key"),
            ("Authorization", "Bearer flowproof-placeholder-key"),
            ("x-stainless-os", "Linux"),
            ("user-agent", "agent/1"),
        ]
    )
    upstream = Upstream(override="http://127.0.0.1:9/v1", bases={}, key="sk-real")
    chat = dialect_named("openai_chat")
    assert chat is not None
    assert upstream.headers_for(chat, incoming) == {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Accept-Encoding": "gzip, deflate",  # what record decodes, whatever the agent asked
        "anthropic-beta": "tools-2024, context-1m",
        "anthropic-version": "2023-06-01",
        "openai-beta": "responses=experimental",
        "openai-organization": "org-1",
        "openai-project": "proj-1",
        "Authorization": "Bearer sk-real",
    }


class _Broken:
    async def answer(self, *args: object, **kwargs: object) -> None:
        raise KeyError("turns")


class _BrokenExact(_Broken):
    """A backend whose byte-exact lane raises (the app answers it with no coroutine)."""

    def answer_exact(self, *args: object, **kwargs: object) -> None:
        raise ValueError("digest")


@pytest.mark.parametrize(
    ("broken", "failure"), [(_Broken, "KeyError: 'turns'"), (_BrokenExact, "ValueError: digest")]
)
def test_a_backend_that_raises_fails_the_flow_in_one_line_and_answers_500(
    broken: type, failure: str
) -> None:
    async def scenario() -> tuple[int, str, Traffic]:
        traffic = Traffic()
        runner, port = await serve(
            make_app(broken(), traffic, CAPABILITY), traffic=traffic, capability=CAPABILITY
        )
        try:
            async with aiohttp.ClientSession() as client:
                async with client.post(
                    f"http://127.0.0.1:{port}{PREFIX}/v1/chat/completions", json=REQUEST
                ) as reply:
                    return reply.status, await reply.text(), traffic
        finally:
            await runner.cleanup()

    status, body, traffic = asyncio.run(scenario())
    assert status == 500 and "internal error in the proxy" in body
    assert traffic.failures == [f"flowproof's proxy failed on POST /v1/chat/completions: {failure}"]


async def outsider_then_agent(
    outsider_path: str, capability: Capability = CAPABILITY
) -> tuple[tuple[int, str], tuple[int, str], Traffic]:
    """A request sent the way another process on the machine would (`outsider_path`, no
    capability), then the agent's own: what each was answered, and the traffic."""
    traffic = Traffic()
    backend = ReplayBackend(TurnMatcher((Turn("openai_chat", REQUEST, RESPONSE),)), {}, traffic)
    app = make_app(backend, traffic, capability)
    runner, port = await serve(app, traffic=traffic, capability=capability)
    try:
        async with aiohttp.ClientSession() as client:
            async with client.post(f"http://127.0.0.1:{port}{outsider_path}", json=REQUEST) as r:
                outsider = (r.status, await r.text())
            agent_url = f"http://127.0.0.1:{port}{capability.prefix}/v1/chat/completions?a=1"
            async with client.post(agent_url, json=REQUEST) as r:
                agent = (r.status, await r.text())
    finally:
        await runner.cleanup()
    return outsider, agent, traffic


@pytest.mark.parametrize(
    "outsider_path",
    [
        "/v1/chat/completions",
        f"/{'x' * len(CAPABILITY.token)}/v1/chat/completions",  # a guess of the right length
        f"{PREFIX}x/v1/chat/completions",  # the token with more after it is not the token
        f"/v1{PREFIX}/chat/completions",  # nor is the token further down the path
    ],
)
def test_a_request_without_the_capability_is_refused_and_consumes_nothing(
    outsider_path: str,
) -> None:
    (status, body), agent, traffic = asyncio.run(outsider_then_agent(outsider_path))
    assert status == 403
    assert json.loads(body)["error"]["message"] == (
        "flowproof: this proxy serves only the agent flowproof started, at the base URL "
        "flowproof gave it; the request's path did not start with it"
    )
    assert traffic.outsiders == [("POST", outsider_path)]
    # The recorded turn was still there for the agent, and the refusal failed nothing.
    assert agent[0] == 200 and json.loads(agent[1]) == RESPONSE
    assert len(traffic.turns) == 1 and traffic.failures == [] and not traffic.fatal.is_set()
    # What the proxy wrote down of the agent's request holds no capability.
    assert traffic.requests == [("POST", "/v1/chat/completions?a=1", "openai_chat")]


def test_a_url_flow_admits_requests_without_the_capability_and_strips_it_from_those_with() -> None:
    open_door = Capability(required=False)
    outsider, agent, traffic = asyncio.run(outsider_then_agent("/v1/chat/completions", open_door))
    assert outsider[0] == 200 and agent[0] == 400  # the one turn went to the first asker
    assert traffic.outsiders == []
    assert [path for _, path, _ in traffic.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions?a=1",
    ]

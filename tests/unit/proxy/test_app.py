"""The proxy app, driven over a real loopback socket by aiohttp's client."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from flowproof.matching.match import TurnMatcher
from flowproof.proxy.app import make_app, serve
from flowproof.proxy.replay import ReplayBackend
from flowproof.proxy.traffic import Traffic
from flowproof.trace.model import Turn

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
    runner, port = await serve(make_app(backend, traffic))
    replies = []
    try:
        async with aiohttp.ClientSession() as client:
            for body in bodies:
                async with client.post(
                    f"http://127.0.0.1:{port}{path}",
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
    assert traffic.requests == [("/v1/chat/completions", "openai_chat")]


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


def test_unknown_path_is_a_named_404() -> None:
    replies, traffic = asyncio.run(exchange(REQUEST, path="/v1/embeddings"))
    assert replies[0][0] == 404
    assert "no model API at /v1/embeddings; paths containing " in replies[0][2]
    assert "/chat/completions" in replies[0][2]
    assert traffic.requests == [("/v1/embeddings", "?")]

"""The streamable-HTTP stand-in at replay, over a real loopback socket: JSON answers, the GET
stream, and the requests it refuses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from flowproof.live.traffic import Traffic
from flowproof.mcp.http import HttpStandIn
from flowproof.mcp.lane import Call, Notice
from flowproof.mcp.server import RecordingServer, ReplayingServer
from flowproof.outbound.reach import Reach

INITIALIZE = {"method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
LIST = {"method": "tools/list"}
RECORDED = [
    Call(INITIALIZE, {"result": {"protocolVersion": "2025-11-25"}}),
    Notice({"method": "notifications/tools/list_changed"}, after=1),
    Call(LIST, {"result": {"tools": []}}),
]
HEADERS = {"Accept": "application/json, text/event-stream"}


def serve(traffic: Traffic, test: Any) -> None:
    async def main() -> None:
        server = ReplayingServer("fs", traffic, {}, RECORDED)
        async with HttpStandIn.replaying(server).serving() as stand_in:
            async with aiohttp.ClientSession() as client:
                await test(client, stand_in.url)

    asyncio.run(main())


def post(client: aiohttp.ClientSession, url: str, body: Any) -> Any:
    return client.post(url, data=json.dumps(body), headers=HEADERS)


def test_a_call_is_answered_as_one_json_body_with_the_agent_s_id() -> None:
    async def test(client: aiohttp.ClientSession, url: str) -> None:
        async with post(client, url, {"jsonrpc": "2.0", "id": 7, **INITIALIZE}) as reply:
            assert reply.status == 200
            assert reply.headers["Content-Type"].startswith("application/json")
            assert reply.headers["Mcp-Session-Id"] == "flowproof-replay"
            assert await reply.json() == {
                "jsonrpc": "2.0",
                "id": 7,
                "result": {"protocolVersion": "2025-11-25"},
            }
        async with post(client, url, {"jsonrpc": "2.0", "method": "notifications/x"}) as reply:
            assert reply.status == 202

    serve(Traffic(), test)


def test_notifications_are_re_emitted_on_the_get_stream_and_a_second_get_is_a_409() -> None:
    async def test(client: aiohttp.ClientSession, url: str) -> None:
        async with post(client, url, {"jsonrpc": "2.0", "id": 1, **INITIALIZE}):
            pass
        stream = await client.get(url, headers={"Accept": "text/event-stream"})
        assert stream.status == 200
        async with client.get(url, headers={"Accept": "text/event-stream"}) as second:
            assert second.status == 409
        async with post(client, url, {"jsonrpc": "2.0", "id": 2, **LIST}) as reply:
            assert (await reply.json())["result"] == {"tools": []}
        line = b""
        while not line.startswith(b"data:"):
            line = await asyncio.wait_for(stream.content.readline(), 5)
        assert json.loads(line[5:]) == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
        }
        stream.close()

    serve(Traffic(), test)


def test_a_batch_is_a_named_400_that_fails_the_flow() -> None:
    traffic = Traffic()

    async def test(client: aiohttp.ClientSession, url: str) -> None:
        async with post(client, url, [{"jsonrpc": "2.0", "id": 1, **LIST}]) as reply:
            assert reply.status == 400
            assert "batches are not part of MCP" in (await reply.json())["error"]["message"]

    serve(traffic, test)
    assert traffic.failures == ["mcp.fs: the agent sent a JSON-RPC batch, which MCP no longer has"]


def test_a_path_without_mcp_is_not_the_endpoint() -> None:
    async def test(client: aiohttp.ClientSession, url: str) -> None:
        async with client.post(url.replace("/mcp", "/v1/tools"), data="{}") as reply:
            assert reply.status == 404
        async with post(
            client, url.replace("/mcp", "/mcp-exec/sap"), {"jsonrpc": "2.0", "id": 1, **INITIALIZE}
        ) as reply:
            assert reply.status == 200

    serve(Traffic(), test)


def test_a_request_without_the_capability_is_refused_and_reaches_no_server() -> None:
    """The stand-in listens on loopback like the proxy: another process that finds its port
    knows the origin, not the capability at the start of the path the agent was given."""
    traffic = Traffic()
    seen: dict[str, Any] = {}

    async def test(client: aiohttp.ClientSession, url: str) -> None:
        scheme, _, authority, capability, endpoint = url.split("/", 4)
        assert endpoint == "mcp" and len(capability) == 24
        origin = f"{scheme}//{authority}"
        for stranger in (f"{origin}/mcp", f"{origin}/{'x' * 24}/mcp", f"{origin}/mcp/{capability}"):
            async with post(client, stranger, {"jsonrpc": "2.0", "id": 1, **INITIALIZE}) as reply:
                assert reply.status == 403
                assert "serves only the agent flowproof started" in await reply.text()
        seen["served_before_the_agent"] = list(traffic.lanes.get("mcp.fs", []))
        async with post(client, url, {"jsonrpc": "2.0", "id": 1, **INITIALIZE}) as reply:
            assert reply.status == 200  # the recorded answer was still there for the agent

    serve(traffic, test)
    assert seen["served_before_the_agent"] == []
    assert [method for method, _ in traffic.outsiders] == ["POST"] * 3
    assert [path for _, path in traffic.outsiders][0] == "/mcp"
    assert traffic.failures == [] and traffic.divergence is None


def test_at_record_auth_and_session_pass_through_and_an_sse_answer_becomes_one_json_body() -> None:
    """The real server here is a loopback app that answers in SSE, with a notification first."""
    from aiohttp import web

    seen: list[dict[str, str]] = []

    async def real(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        body = await request.json()
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": "sess-42"}
        )
        await response.prepare(request)
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}}
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"protocolVersion": "2025-11-25"}}
        for message in (None, note, answer):  # None: the 2025-11-25 priming event
            data = "" if message is None else json.dumps(message)
            await response.write(f"id: x\ndata: {data}\n\n".encode())
        await response.write_eof()
        return response

    async def main() -> tuple[Traffic, Any]:
        app = web.Application()
        app.router.add_post("/mcp", real)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        traffic = Traffic()
        server = RecordingServer("fs", traffic, {})
        try:
            async with HttpStandIn.recording(
                server, f"http://127.0.0.1:{port}/mcp", Reach()
            ).serving() as stand_in:
                async with aiohttp.ClientSession() as client:
                    headers = {**HEADERS, "Authorization": "Bearer sk-mcp-9", "Mcp-Session-Id": "s"}
                    body = json.dumps({"jsonrpc": "2.0", "id": 3, **INITIALIZE})
                    async with client.post(stand_in.url, data=body, headers=headers) as reply:
                        return traffic, (
                            reply.status,
                            reply.headers.get("Mcp-Session-Id"),
                            reply.headers["Content-Type"],
                            await reply.json(),
                        )
        finally:
            await runner.cleanup()

    traffic, (status, session, kind, answer) = asyncio.run(main())
    assert (status, session) == (200, "sess-42") and kind.startswith("application/json")
    assert answer == {"jsonrpc": "2.0", "id": 3, "result": {"protocolVersion": "2025-11-25"}}
    assert seen[0]["Authorization"] == "Bearer sk-mcp-9" and seen[0]["Mcp-Session-Id"] == "s"
    lane = traffic.lanes["mcp.fs"]
    assert lane == [
        Notice({"method": "notifications/message", "params": {"data": "hi"}}, after=0),
        Call(INITIALIZE, {"result": {"protocolVersion": "2025-11-25"}}),
    ]
    assert "sk-mcp-9" not in repr(lane)

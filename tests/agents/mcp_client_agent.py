"""A test agent on the Python `mcp` SDK that calls MCP tools it is told to call; no model.

    python tests/agents/mcp_client_agent.py --server NAME [--mode modern|classic]
                                           [--parallel] [--calls JSON]

The server comes from the environment flowproof injects: FLOWPROOF_MCP_SERVER_<NAME> (a
POSIX-quoted stdio command line) or FLOWPROOF_MCP_URL_<NAME> (a streamable-HTTP URL); NAME is
upper-cased with every non-alphanumeric as `_`. The task is a JSON list of calls,
[{"name": ..., "arguments": {...}}], from --calls or else FLOWPROOF_PROMPT.

--mode modern uses `mcp.Client` (it probes `server/discover` first, then falls back to
`initialize` on a handshake-era server); --mode classic uses `ClientSession.initialize()`.
--parallel issues every call at once on the one session; otherwise they go in order.

stdout: one line per call, in task order, `RESULT <tool> <compact JSON>` where the JSON is
{"content": [...], "structuredContent": ... (if any), "isError": true (if so)}; before them, one
`NOTIFY log|progress <compact JSON>` line per notification received. stderr: `ANSWERED <index>
<tool>` as each answer arrives (so a test sees the order replies came back in). Sampling is
answered with "sampled: <last message text>", roots/list with file:///tmp/flowproof-roots.
Exit 0 on success (an MCP error result is printed, not fatal), 2 on a usage or setup error,
1 when the MCP session fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import warnings
from typing import Any, NoReturn

warnings.simplefilter("ignore")  # sampling/roots/logging are "deprecated as of 2026-07-28"

import mcp_contract as contract  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp_types import (  # noqa: E402
    CreateMessageResult,
    ListRootsResult,
    Root,
    TextContent,
)

ROOTS_URI = "file:///tmp/flowproof-roots"
SAMPLING_MODEL = "flowproof-fixed-sampler"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def fail(message: str, code: int = 2) -> NoReturn:
    contract.fail("mcp_client_agent", message, code)


def server_target(server: str) -> StdioServerParameters | str:
    """The stdio parameters or the URL the contract's environment names for this server."""
    target = contract.server_target("mcp_client_agent", server)
    if target.url is not None:
        return target.url
    assert target.argv is not None
    return StdioServerParameters(command=target.argv[0], args=target.argv[1:])


def parse_calls(raw: str | None) -> list[dict[str, Any]]:
    if raw is None:
        fail("no task: pass --calls JSON or set FLOWPROOF_PROMPT")
    try:
        calls = json.loads(raw or "")
    except json.JSONDecodeError as error:
        fail(f"the task is not JSON ({error}): {raw!r}")
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls
    ):
        fail(f'the task must be a JSON list of {{"name": ..., "arguments": {{...}}}}: {raw!r}')
    return calls


async def sampling_callback(context: Any, params: Any) -> CreateMessageResult:
    last = params.messages[-1].content if params.messages else None
    said = last.text if isinstance(last, TextContent) else "(no text)"
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=f"sampled: {said}"),
        model=SAMPLING_MODEL,
        stop_reason="endTurn",
    )


async def list_roots_callback(context: Any) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri=ROOTS_URI, name="flowproof-roots")])


async def logging_callback(params: Any) -> None:
    print("NOTIFY log " + compact(params.model_dump(mode="json", by_alias=True, exclude_none=True)))


def render(result: Any) -> str:
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    shown: dict[str, Any] = {"content": dumped.get("content", [])}
    if dumped.get("structuredContent") is not None:
        shown["structuredContent"] = dumped["structuredContent"]
    if dumped.get("isError"):
        shown["isError"] = True
    return compact(shown)


async def run_calls(session: Any, calls: list[dict[str, Any]], parallel: bool) -> list[str]:
    # What an agent does first: learn the tools. It also fills the SDK's output-schema cache;
    # without it the SDK lists the tools lazily after the first answer, and two answers that
    # arrive together (as replayed ones do) make it list them twice.
    await session.list_tools()

    async def one(index: int, call: dict[str, Any]) -> str:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            shown = {"call": index, "progress": value, "total": total, "message": message}
            print("NOTIFY progress " + compact(shown))

        result = await session.call_tool(
            call["name"], call.get("arguments") or {}, progress_callback=progress
        )
        print(f"ANSWERED {index} {call['name']}", file=sys.stderr, flush=True)
        return render(result)

    if parallel:
        return list(await asyncio.gather(*(one(i, c) for i, c in enumerate(calls))))
    return [await one(i, c) for i, c in enumerate(calls)]


async def modern(target: StdioServerParameters | str, calls: list[dict[str, Any]], parallel: bool):
    started = time.monotonic()
    async with Client(
        target,
        sampling_callback=sampling_callback,
        list_roots_callback=list_roots_callback,
        logging_callback=logging_callback,
        log_level="debug",  # 2026-07-28 servers send log messages only to requests that opt in
    ) as client:
        print(f"protocol {client.protocol_version}", file=sys.stderr)
        # How long connecting took, server/discover included (a probe left unanswered costs 10 s)
        print(f"connected in {time.monotonic() - started:.2f}s", file=sys.stderr, flush=True)
        return await run_calls(client, calls, parallel)


async def classic(target: StdioServerParameters | str, calls: list[dict[str, Any]], parallel: bool):
    transport = streamable_http_client(target) if isinstance(target, str) else stdio_client(target)
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(
            read,
            write,
            sampling_callback=sampling_callback,
            list_roots_callback=list_roots_callback,
            logging_callback=logging_callback,
        ) as session:
            init = await session.initialize()
            print(f"protocol {init.protocol_version}", file=sys.stderr)
            return await run_calls(session, calls, parallel)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the MCP server's name in the contract")
    parser.add_argument("--mode", choices=("modern", "classic"), default="modern")
    parser.add_argument("--parallel", action="store_true", help="issue all calls concurrently")
    parser.add_argument("--calls", help="the task as JSON (overrides FLOWPROOF_PROMPT)")
    args = parser.parse_args()
    target = server_target(args.server)
    calls = parse_calls(
        args.calls if args.calls is not None else os.environ.get("FLOWPROOF_PROMPT")
    )
    run = modern if args.mode == "modern" else classic
    try:
        lines = asyncio.run(run(target, calls, args.parallel))
    except Exception as error:  # the session failed: say so plainly, not with a traceback
        fail(f"MCP session with {args.server!r} failed: {contract.describe(error)}", 1)
    for call, line in zip(calls, lines, strict=True):
        print(f"RESULT {call['name']} {line}")


if __name__ == "__main__":
    main()

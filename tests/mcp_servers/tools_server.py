"""A real MCP server (the `mcp` SDK's MCPServer, FastMCP's 2.x name) the end-to-end tests drive.

    python tests/mcp_servers/tools_server.py [--log PATH] [--http PORT]

Without --http it speaks stdio; with --http it serves streamable HTTP on 127.0.0.1:PORT/mcp.
--log appends one JSON line per tools/call it receives, {"tool": ..., "arguments": ...}, before
the tool runs: a test reads it to prove a call did (or never did) reach the real server.
Everything comes from argv because the MCP SDKs strip the environment of a stdio server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, ListRoots, Resolve, Sample
from mcp_types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent

# sampling, roots and logging are "deprecated as of 2026-07-28"; this server uses them on purpose
warnings.simplefilter("ignore")

LOG: Path | None = None
server = MCPServer("flowproof-tools", version="1.0.0", log_level="WARNING")


def log_call(tool: str, arguments: dict[str, Any]) -> None:
    if LOG is None:
        return
    line = json.dumps({"tool": tool, "arguments": arguments, "at": time.time(), "pid": os.getpid()})
    with LOG.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    log_call("echo", {"text": text})
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    log_call("add", {"a": a, "b": b})
    return a + b


@server.tool(annotations={"destructiveHint": True})
def delete_file(path: str) -> str:
    """Delete a file (destructive; this test server only logs the call)."""
    log_call("delete_file", {"path": path})
    return f"deleted {path}"


@server.tool()
async def slow_echo(text: str, delay_ms: int) -> str:
    """Return the text after sleeping delay_ms milliseconds."""
    log_call("slow_echo", {"text": text, "delay_ms": delay_ms})
    await asyncio.sleep(delay_ms / 1000)
    return text


@server.tool()
async def notify(text: str, ctx: Context) -> str:
    """Send a log-message notification (and a progress one, given a progressToken), then return."""
    log_call("notify", {"text": text})
    await ctx.info(f"notify: {text}")
    await ctx.report_progress(1, 1, f"notified {text}")  # a no-op without a progressToken
    # npm @modelcontextprotocol/sdk 1.32.2 runs notification handlers a microtask later but
    # settles the response at once: a progress notification read in the same chunk as its
    # response finds its handler gone and is dropped. A pause keeps them in separate reads.
    await asyncio.sleep(0.05)
    return f"notified {text}"


def sample_prompt(prompt: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=64,
    )


def want_roots() -> ListRoots:
    return ListRoots()


# Sampling and roots go through resolvers, so they work in both protocol eras: on 2025-11-25
# and older the SDK sends sampling/createMessage (roots/list) to the client mid-call; on
# 2026-07-28 it answers the first tools/call with an InputRequiredResult and runs the body when
# the client retries with the answers (MRTR). The body, and so the --log line, runs once.
@server.tool()
def ask_model(prompt: str, sampled: Annotated[CreateMessageResult, Resolve(sample_prompt)]) -> str:
    """Ask the client's model (sampling/createMessage) and return what it sampled."""
    log_call("ask_model", {"prompt": prompt})
    content = sampled.content
    return content.text if isinstance(content, TextContent) else json.dumps(content.model_dump())


@server.tool()
def list_roots(roots: Annotated[ListRootsResult, Resolve(want_roots)]) -> list[str]:
    """Ask the client for its roots (roots/list) and return their URIs."""
    log_call("list_roots", {})
    return [str(root.uri) for root in roots.roots]


def main() -> None:
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, help="append one JSON line per tools/call")
    parser.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on 127.0.0.1")
    args = parser.parse_args()
    LOG = args.log
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http, streamable_http_path="/mcp")
    sys.exit(0)


if __name__ == "__main__":
    main()

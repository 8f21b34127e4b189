"""An openai-agents agent whose only tools are one MCP server's (MCPServerStdio or
MCPServerStreamableHttp, built from the contract in mcp_contract.py).

    python tests/agents/agents_mcp_agent.py --server NAME

The task is FLOWPROOF_PROMPT; the model is reached through OPENAI_BASE_URL / OPENAI_API_KEY,
read by the SDK itself, over the Responses API (the SDK's default). Tracing is off. Prints the
final output. Exit 0 on success, 2 on a usage error, 1 when the run fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # set before the SDK loads

import mcp_contract as contract  # noqa: E402
from agents import Agent, Runner, set_tracing_disabled  # noqa: E402
from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp  # noqa: E402

PROGRAM = "agents_mcp_agent"
INSTRUCTIONS = "You are a careful assistant. Use the MCP tools to do what the user asks."


def build_server(name: str) -> MCPServer:
    target = contract.server_target(PROGRAM, name)
    if target.url is not None:
        return MCPServerStreamableHttp(params={"url": target.url}, name=name)
    assert target.argv is not None
    return MCPServerStdio(params={"command": target.argv[0], "args": target.argv[1:]}, name=name)


async def run(server: MCPServer, prompt: str) -> object:
    async with server:
        agent = Agent(name="MCP assistant", instructions=INSTRUCTIONS, mcp_servers=[server])
        result = await Runner.run(agent, prompt)
        return result.final_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the MCP server's name in the contract")
    args = parser.parse_args()
    prompt = os.environ.get("FLOWPROOF_PROMPT")
    if not prompt:
        contract.fail(PROGRAM, "FLOWPROOF_PROMPT is not set: no task")
    set_tracing_disabled(True)
    server = build_server(args.server)
    try:
        final = asyncio.run(run(server, prompt))
    except Exception as error:
        contract.fail(PROGRAM, f"the run failed: {contract.describe(error)}", 1)
    print(final)


if __name__ == "__main__":
    main()

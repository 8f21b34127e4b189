"""A chat-completions agent (plain `openai` SDK) whose tools are one MCP server's tools/list,
with a guard in code: the tools named by --refuse are never called.

    python tests/agents/mcp_guard_agent.py --server NAME [--refuse TOOL]... [--max-turns N]

The server comes from the contract in mcp_contract.py (ClientSession over stdio or streamable
HTTP, classic `initialize`). The task is FLOWPROOF_PROMPT; the model is reached through
OPENAI_BASE_URL / OPENAI_API_KEY (AGENT_MODEL names it, default gpt-4o-mini). Each tool call the
model asks for is executed with MCP tools/call and its result handed back, except a refused
tool: the agent answers the model {"error": "refused: <tool> is not allowed in plan mode"} and
sends nothing to the server. Prints the final reply. Exit 0 on success, 2 on a usage error, 1
when the MCP session or the model fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import warnings
from typing import Any

warnings.simplefilter("ignore")  # the mcp SDK marks handshake-era features deprecated

import mcp_contract as contract  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

PROGRAM = "mcp_guard_agent"
SYSTEM = "You are an operations assistant. Use the tools to do what the user asks."


def openai_tools(listed: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.input_schema,
            },
        }
        for tool in listed.tools
    ]


def tool_output(result: Any) -> str:
    """What the model is told a tool returned: its text content, or its structured content."""
    texts = [item.text for item in result.content if getattr(item, "type", "") == "text"]
    if texts:
        return "\n".join(texts)
    return json.dumps(result.structured_content)


async def agent_loop(session: ClientSession, prompt: str, refuse: set[str], max_turns: int) -> str:
    tools = openai_tools(await session.list_tools())
    client = AsyncOpenAI()
    model = os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    for _turn in range(max_turns):
        reply = await client.chat.completions.create(model=model, messages=messages, tools=tools)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                    for call in message.tool_calls
                ],
            }
        )
        for call in message.tool_calls:
            name = call.function.name
            if name in refuse:
                output = json.dumps({"error": f"refused: {name} is not allowed in plan mode"})
            else:
                arguments = json.loads(call.function.arguments or "{}")
                output = tool_output(await session.call_tool(name, arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    contract.fail(PROGRAM, f"no final reply after {max_turns} model turns", 1)


async def run(target: contract.Target, prompt: str, refuse: set[str], max_turns: int) -> str:
    if target.url is not None:
        transport = streamable_http_client(target.url)
    else:
        assert target.argv is not None
        transport = stdio_client(
            StdioServerParameters(command=target.argv[0], args=target.argv[1:])
        )
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            return await agent_loop(session, prompt, refuse, max_turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the MCP server's name in the contract")
    parser.add_argument(
        "--refuse", action="append", default=[], metavar="TOOL", help="never call this tool"
    )
    parser.add_argument("--max-turns", type=int, default=8)
    args = parser.parse_args()
    prompt = os.environ.get("FLOWPROOF_PROMPT")
    if not prompt:
        contract.fail(PROGRAM, "FLOWPROOF_PROMPT is not set: no task")
    target = contract.server_target(PROGRAM, args.server)
    try:
        final = asyncio.run(run(target, prompt, set(args.refuse), args.max_turns))
    except Exception as error:
        contract.fail(PROGRAM, f"the run failed: {contract.describe(error)}", 1)
    print(final)


if __name__ == "__main__":
    main()

"""Doctor through its two doors: `flowproof doctor --json` and the `doctor` tool of a real
`flowproof mcp` process (the `mcp` SDK's client over stdio) give the same document for the same
agent, refuse the same arguments with the same reason and exit code, and neither shows a
record key or a proxy's password from flowproof's environment."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import ROOT, agent_command, flowproof

pytestmark = pytest.mark.e2e

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
KEY = "sk-doctor-doors-5f0c1e2d3b4a"
PROXY_PASSWORD = "proxy-pass-8d7c6b5a"
PROXY = f"http://doctor:{PROXY_PASSWORD}@proxy.invalid:3128"


def mcp_doctor(project: Path, calls: list[dict[str, Any]], **env: str) -> list[dict[str, Any]]:
    """The `doctor` tool's result for each of `calls`, from one `flowproof mcp` server."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "flowproof", "mcp", "--directory", str(project)],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )
    results: list[dict[str, Any]] = []

    async def main() -> None:
        with anyio.fail_after(180):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                for arguments in calls:
                    result = await client.call_tool("doctor", arguments)
                    assert not result.is_error, result  # a refusal is data, not a tool error
                    assert isinstance(result.structured_content, dict), result
                    results.append(result.structured_content)

    anyio.run(main)
    return results


def cli_doctor(project: Path, *args: str, **env: str) -> tuple[int, dict[str, Any], str]:
    """Exit code, the --json document and the whole output of `flowproof doctor`."""
    result = flowproof("doctor", "--json", *args, cwd=project, env=env)
    return result.code, json.loads(result.stdout), result.output


def without_port(document: dict[str, Any]) -> dict[str, Any]:
    """Each run has a proxy of its own, on a port of its own."""
    return {key: value for key, value in document.items() if key != "proxy_port"}


def test_the_mcp_tool_returns_the_document_doctor_json_prints(tmp_path: Path) -> None:
    agent = agent_command("openai_chat_agent.py")
    code, printed, output = cli_doctor(
        tmp_path, "--agent", agent, "--mcp", "files", "--env", f"HTTPS_PROXY={PROXY}"
    )
    (returned,) = mcp_doctor(
        tmp_path, [{"command": agent, "mcp": ["files"], "env": {"HTTPS_PROXY": PROXY}}]
    )
    # A model request arrived, and the named MCP server was never reached: exit 1 both ways.
    assert code == printed["exit_code"] == returned["exit_code"] == 1, output
    assert printed["model_requests"] == 1 and printed["mcp_missed"] == ["files"]
    assert list(returned) == list(printed)
    assert without_port(returned) == without_port(printed)
    assert returned["proxy_variables"] == [{"name": "HTTPS_PROXY", "host": "proxy.invalid:3128"}]


REFUSED = [
    (
        ["--mcp", "no spaces"],
        {"mcp": ["no spaces"]},
        "mcp",
        "'no spaces' is not an MCP server name (a letter or digit, then letters, digits, '_', "
        "'.' or '-')",
    ),
    (
        ["--mcp", "files", "--mcp-url", "files"],
        {"mcp": ["files"], "mcp_url": ["files"]},
        "mcp-url",
        "'files' is named twice",
    ),
    (
        ["--env", "1ST=x"],
        {"env": {"1ST": "x"}},
        "env",
        "'1ST' is not a variable name (letters, digits and '_', not starting with a digit)",
    ),
]


def test_both_doors_refuse_the_same_arguments_with_the_same_reason_and_exit_2(
    tmp_path: Path,
) -> None:
    returned = mcp_doctor(
        tmp_path, [{"command": "true", **arguments} for _, arguments, _, _ in REFUSED]
    )
    for (args, _, option, reason), through_mcp in zip(REFUSED, returned, strict=True):
        code, printed, output = cli_doctor(tmp_path, "--agent", "true", *args)
        assert code == 2, output
        assert printed["error"]["kind"] == through_mcp["error"]["kind"] == "usage"
        assert printed["error"]["exit_code"] == through_mcp["error"]["exit_code"] == 2
        assert printed["error"]["message"] == f"Invalid value for --{option}: {reason}"
        # The MCP tool names its arguments as its schema spells them (mcp_url, not --mcp-url).
        assert through_mcp["error"]["message"] == f"{option.replace('-', '_')}: {reason}"


def test_no_record_key_or_proxy_password_of_flowproofs_environment_reaches_either_door(
    tmp_path: Path,
) -> None:
    """The agent is handed the key (`--env` with `${FLOWPROOF_AGENT_KEY}`) and the proxy (from
    the environment) and prints both on its stderr, which doctor reports."""
    agent = "sh -c 'echo \"key: $LEAKED, proxy: $HTTPS_PROXY\" >&2; exit 3'"
    env = {"FLOWPROOF_AGENT_KEY": KEY, "HTTPS_PROXY": PROXY}
    code, printed, output = cli_doctor(
        tmp_path, "--agent", agent, "--env", "LEAKED=${FLOWPROOF_AGENT_KEY}", **env
    )
    (returned,) = mcp_doctor(
        tmp_path, [{"command": agent, "env": {"LEAKED": "${FLOWPROOF_AGENT_KEY}"}}], **env
    )
    assert code == 1, output
    for document in (printed, returned):
        assert document["agent"]["exit_code"] == 3
        assert document["agent"]["stderr_tail"] == (
            "key: [redacted FLOWPROOF_AGENT_KEY], "
            "proxy: http://doctor:[redacted HTTPS_PROXY]@proxy.invalid:3128"
        )
        assert document["proxy_variables"] == [
            {"name": "HTTPS_PROXY", "host": "proxy.invalid:3128"}
        ]
    for shown in (output, json.dumps(returned)):
        assert KEY not in shown and PROXY_PASSWORD not in shown

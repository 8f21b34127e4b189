"""MCP calls in the evidence, end to end: a real FastMCP server and an `mcp` SDK ClientSession
agent over stdio, recorded then replayed through the CLI; the run record and the reports
rendered from it show the MCP lane beside the (empty) model lane. Every run record written here
is also checked against the committed schema (tests/e2e/conftest.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import flowproof

pytest.importorskip("mcp", reason="the mcp SDK is missing (pip install mcp)")

SERVER = """\
from mcp.server.mcpserver import MCPServer
app = MCPServer("t")
@app.tool()
def echo(text: str) -> str:
    return f"echo: {text}"
@app.tool()
def delete_file(path: str) -> str:
    raise SystemExit("delete_file reached the real server")
app.run()
"""

AGENT = """\
import asyncio, json, os, shlex
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    argv = shlex.split(os.environ["FLOWPROOF_MCP_SERVER_TOOLS"])
    async with stdio_client(StdioServerParameters(command=argv[0], args=argv[1:])) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            await session.list_tools()
            for call in json.loads(os.environ["FLOWPROOF_PROMPT"]):
                await session.call_tool(call["name"], call["arguments"])
asyncio.run(main())
"""

PROMPT = (
    '[{"name":"echo","arguments":{"text":"TEXT"}},{"name":"delete_file","arguments":{"path":"/x"}}]'
)


def write_flow(project: Path, text: str = "hi") -> None:
    (project / "server.py").write_text(SERVER)
    (project / "agent.py").write_text(AGENT)
    specs = project / "specs"
    specs.mkdir(exist_ok=True)
    (specs / "m.yaml").write_text(
        "name: mcp evidence\n"
        "app: agent\n"
        "agent:\n"
        f"  command: {sys.executable} {project / 'agent.py'}\n"
        "mcp:\n"
        "  - name: tools\n"
        f"    command: {sys.executable} {project / 'server.py'}\n"
        "    tools:\n"
        "      - name: delete_file\n"
        "        result: {result: mocked}\n"
        "steps:\n"
        f"  - prompt: '{PROMPT.replace('TEXT', text)}'\n"
        f"  - assert_tool_call: tools/echo where text equals {text}\n"
        "  - assert_tool_call: tools/delete_file\n"
    )


def latest_record(project: Path) -> dict:
    path = sorted((project / ".flowproof" / "runs").glob("*/report.json"))[-1]
    return json.loads(path.read_text())


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    write_flow(tmp_path)
    # The flow makes no model call; an upstream must still be named to record.
    result = flowproof(
        "record",
        "specs/m.yaml",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": "http://127.0.0.1:9"},
    )
    assert result.code == 0, result.output
    return tmp_path


def test_the_run_record_and_reports_show_the_mcp_lane(recorded: Path) -> None:
    result = flowproof(
        "run",
        "specs/m.yaml",
        "--html",
        "r.html",
        "--markdown",
        "r.md",
        "--junit",
        "r.xml",
        cwd=recorded,
    )
    assert result.code == 0, result.output
    flow = latest_record(recorded)["flows"][0]
    rows = [(r["kind"], r["call"], r["method"], r["tool"], r["mocked"]) for r in flow["timeline"]]
    assert rows == [
        ("call", 1, "initialize", None, False),
        ("call", 2, "tools/list", None, False),
        ("call", 3, "tools/call", "echo", False),
        ("call", 4, "tools/call", "delete_file", True),
    ]
    assert flow["timeline"][2]["arguments"] == {"text": "hi"}
    assert flow["timeline"][2]["result"]["structuredContent"] == {"result": "echo: hi"}
    executed = [(c["name"], c["mocked"]) for c in flow["trajectory"]["executed"]]
    assert executed == [("tools/echo", False), ("tools/delete_file", True)]

    page = (recorded / "r.html").read_text()
    assert "0 model turns · 0 tool calls · 4 MCP calls" in page
    assert '<code>delete_file</code> <span class="badge badge-mocked">mocked by flowproof' in page
    assert "mcp.tools: 4 calls (1 mocked by flowproof)" in (recorded / "r.md").read_text()
    assert "mcp.tools: 4 calls (1 mocked by flowproof)\n" in (recorded / "r.xml").read_text()


def test_an_mcp_divergence_is_reported_at_its_lane_and_call(recorded: Path) -> None:
    write_flow(recorded, text="ho")
    result = flowproof("run", "specs/m.yaml", "--html", "r.html", cwd=recorded)
    assert result.code == 1, result.output
    divergence = latest_record(recorded)["flows"][0]["divergence"]
    assert (divergence["lane"], divergence["index"], divergence["recorded_index"]) == (
        "mcp.tools",
        3,
        3,
    )
    assert (divergence["path"], divergence["recorded"], divergence["replayed"]) == (
        "params.arguments.text",
        '"hi"',
        '"ho"',
    )
    page = (recorded / "r.html").read_text()
    assert "Diverged at mcp.tools call 3 <span>· compared with recorded call 3</span>" in page
    assert "MCP · tools · call 3 · diverged" in page

"""`flowproof doctor --mcp/--mcp-url`: MCP contacts per server, and each request's real method."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import flowproof

# A stdio MCP client in a few lines: spawn the stand-in the way an SDK does (argv from the
# injected variable), send `initialize`, read the answer, exit 0 whatever it was.
STDIO_AGENT = """\
import json, os, shlex, subprocess
argv = shlex.split(os.environ["FLOWPROOF_MCP_SERVER_FILES"])
child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
message = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "t", "version": "0"}}}
child.stdin.write(json.dumps(message) + "\\n")
child.stdin.flush()
print(child.stdout.readline())
child.stdin.close()
child.wait(timeout=10)
"""


def test_doctor_reports_each_named_mcp_server_it_was_or_was_not_reached_at(
    tmp_path: Path,
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(STDIO_AGENT)
    result = flowproof(
        "doctor",
        "--agent",
        f"{sys.executable} {agent}",
        "--mcp",
        "files",
        "--mcp-url",
        "web",
        "--timeout",
        "30",
        cwd=tmp_path,
    )
    assert result.code == 1, result.output  # no model request, and `web` never reached
    assert "1 of 2 MCP stand-ins reached" in result.stderr
    assert "  mcp files (stdio): spawned 1 time; 1 call arrived" in result.stderr
    assert (
        "  mcp web (http): never contacted. Point its URL at $FLOWPROOF_MCP_URL_WEB."
        in result.stderr
    )
    assert "No model request arrived, but MCP calls did" in result.stderr
    assert "The agent exited with code 0." in result.stderr


def test_doctor_prints_the_method_each_request_came_with(tmp_path: Path) -> None:
    command = (
        'python3 -c "import os,urllib.request as u;'
        "u.urlopen(u.Request(os.environ['OPENAI_BASE_URL']+'/chat/completions'))\""
    )
    result = flowproof("doctor", "--agent", command, cwd=tmp_path)
    assert (
        "1 × GET /v1/chat/completions  →  openai_chat, but not a model call: only POST is (405)"
        in result.stderr
    ), result.output


def test_doctor_refuses_a_name_that_is_not_an_mcp_server_name(tmp_path: Path) -> None:
    result = flowproof("doctor", "--agent", "true", "--mcp", "a b", cwd=tmp_path)
    assert result.code == 2
    assert "Invalid value for --mcp: 'a b' is not an MCP server name" in result.stderr

"""Real MCP servers and agents for the end-to-end tests, and the helpers that start them.

The fixtures (see README.md here): tools_server.py (our MCPServer), server-everything through
tests/agents/node/everything.mjs, and the agents in tests/agents/ that follow flowproof's MCP
contract (FLOWPROOF_MCP_SERVER_<NAME> or FLOWPROOF_MCP_URL_<NAME>). Everything binds loopback.
"""

from __future__ import annotations

import http.client
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "tests" / "agents"
NODE_AGENTS = AGENTS / "node"
TOOLS_SERVER = Path(__file__).resolve().parent / "tools_server.py"
EVERYTHING = NODE_AGENTS / "everything.mjs"
PY_MCP_AGENT = AGENTS / "mcp_client_agent.py"
NODE_MCP_AGENT = NODE_AGENTS / "mcp_agent.mjs"
AGENTS_MCP_AGENT = AGENTS / "agents_mcp_agent.py"
GUARD_AGENT = AGENTS / "mcp_guard_agent.py"


def node_mcp_missing() -> str | None:
    """Why the Node fixtures cannot run here, or None when they can."""
    if shutil.which("node") is None:
        return "the Node MCP fixtures need `node` (20 or later) on PATH"
    for package in ("sdk", "server-everything"):
        if not (NODE_AGENTS / "node_modules" / "@modelcontextprotocol" / package).is_dir():
            return (
                f"the Node MCP fixtures need @modelcontextprotocol/{package} in "
                f"{NODE_AGENTS}/node_modules; run `npm ci --prefix tests/agents/node`"
            )
    return None


def env_name(server: str) -> str:
    """The contract's spelling of a server name: upper-cased, non-alphanumerics as `_`."""
    return re.sub(r"[^A-Za-z0-9]", "_", server).upper()


def stdio_env(server: str, argv: Sequence[str]) -> dict[str, str]:
    """The environment that points an agent at a stdio server started with `argv`."""
    return {f"FLOWPROOF_MCP_SERVER_{env_name(server)}": shlex.join(argv)}


def url_env(server: str, url: str) -> dict[str, str]:
    """The environment that points an agent at a streamable-HTTP server."""
    return {f"FLOWPROOF_MCP_URL_{env_name(server)}": url}


def tools_server_argv(log: Path | None = None, http: int | None = None) -> list[str]:
    argv = [sys.executable, str(TOOLS_SERVER)]
    if log is not None:
        argv += ["--log", str(log)]
    if http is not None:
        argv += ["--http", str(http)]
    return argv


def everything_argv(http: int | None = None) -> list[str]:
    mode = ["stdio"] if http is None else ["streamableHttp", str(http)]
    return ["node", str(EVERYTHING), *mode]


def free_port() -> int:
    """A loopback port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class HttpServer:
    process: subprocess.Popen[bytes]
    port: int
    stderr_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def _answers(port: int) -> bool:
    """Whether an HTTP server on the port answers a request on /mcp (any status will do:
    a GET without a session is refused, which proves the MCP endpoint is up)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
        return connection.getresponse().status > 0
    except OSError:
        return False
    finally:
        connection.close()


@contextmanager
def http_server(argv_for_port, *, timeout: float = 20.0) -> Iterator[HttpServer]:
    """Start an HTTP MCP server on a free loopback port and wait until /mcp answers.

    `argv_for_port(port)` gives its command line, e.g. `lambda p: tools_server_argv(http=p)`
    or `everything_argv`. The server is stopped (SIGTERM, then SIGKILL) on exit."""
    port = free_port()
    with tempfile.NamedTemporaryFile(prefix="mcp-http-", suffix=".stderr", delete=False) as err:
        stderr_path = Path(err.name)
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            argv_for_port(port), stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr
        )
    server = HttpServer(process, port, stderr_path)
    try:
        deadline = time.monotonic() + timeout
        while not _answers(port):
            if process.poll() is not None:
                raise RuntimeError(
                    f"the MCP server exited ({process.returncode}): {server.stderr()}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"the MCP server on {port} did not answer in {timeout}s")
            time.sleep(0.05)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stderr_path.unlink(missing_ok=True)


def clean_agent_env(**extra: str) -> dict[str, str]:
    """os.environ without flowproof's, the model SDKs' or proxy variables, plus `extra`."""
    stripped = ("OPENAI_", "ANTHROPIC_", "FLOWPROOF_", "AGENT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(stripped)}
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        env.pop(proxy, None)
        env.pop(proxy.lower(), None)
    env.update(extra)
    return env

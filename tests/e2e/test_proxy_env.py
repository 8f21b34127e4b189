"""Proxy variables on the runner: the agent's calls to flowproof's loopback go direct.

A corporate machine or a self-hosted runner often sets HTTP_PROXY/HTTPS_PROXY/ALL_PROXY. The
proxy here is a real listener on loopback that stands for one that cannot reach the runner: it
keeps every connection it gets and answers 502. With every proxy variable (both spellings)
pointing at it, three real agents record against the scripted upstream and replay green, and
the proxy sees nothing:

- the openai and anthropic Python SDKs (httpx honours the variables even for 127.0.0.1);
- the npm `openai` SDK, with undici's EnvHttpProxyAgent as its fetch dispatcher, as a Node agent
  behind a corporate proxy is set up (Node 20's own fetch ignores the variables, so without
  that dispatcher the case could not fail).

Without flowproof adding loopback to NO_PROXY and no_proxy, each of them sends its model calls
to the proxy and the record fails. A user's own NO_PROXY entries are kept (seen by the suite's
before_each, which is started with the agent's environment, and by a real MCP server a record
starts), and doctor names the proxy variables it saw by host, never with the credentials in the
proxy URL.
"""

from __future__ import annotations

import shlex
import shutil
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import mcp_servers as fx
from tests.conftest import ROOT, CliResult, agent_command, flowproof
from tests.e2e import booking
from tests.e2e import test_mcp as mcp
from tests.e2e.booking import BOOKING_SCRIPT, record
from tests.upstream.scripted import ScriptedUpstream

NODE_AGENTS = ROOT / "tests" / "agents" / "node"
LOOPBACK = "127.0.0.1,localhost,::1"
PROXY_PASSWORD = "pr0xy-passw0rd"


class DeadProxy(socketserver.ThreadingTCPServer):
    """A proxy that cannot reach anything: every connection is kept (its first line) and
    answered 502, then closed."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Refuse)
        self.seen: list[str] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Refuse(socketserver.StreamRequestHandler):
    server: DeadProxy

    def handle(self) -> None:
        self.connection.settimeout(5)
        try:
            first = self.rfile.readline(4096).decode("latin-1").strip()
        except OSError:  # a timeout included
            first = "(nothing readable)"
        with self.server.lock:
            self.server.seen.append(first)
        self.wfile.write(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )


@pytest.fixture
def dead_proxy() -> Iterator[DeadProxy]:
    server = DeadProxy()
    thread = threading.Thread(target=server.serve_forever, name="dead-proxy", daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def proxy_environment(url: str) -> dict[str, str]:
    """Every proxy variable, in both spellings, pointing at `url`."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    return {spelling: url for name in names for spelling in (name, name.lower())}


def node_agent() -> str:
    if shutil.which("node") is None or not (NODE_AGENTS / "node_modules" / "undici").is_dir():
        pytest.skip(
            "the Node case needs `node` and the npm `openai` and `undici` packages in "
            f"{NODE_AGENTS}/node_modules; run `make install`"
        )
    return f"node {NODE_AGENTS / 'booking_agent.mjs'}"


AGENTS = {
    "openai-python": lambda: agent_command("openai_chat_agent.py"),
    "anthropic-python": lambda: agent_command("anthropic_agent.py"),
    "openai-node": node_agent,
}
AGENT_ENV = {"openai-node": {"AGENT_ENV_PROXY": "1"}}


def record_and_replay(
    tmp_path: Path, upstream: ScriptedUpstream, agent: str, env: dict[str, str]
) -> tuple[CliResult, CliResult]:
    """Record the booking flow with `agent` under `env`, stop the upstream, replay it."""
    upstream.script = BOOKING_SCRIPT
    booking.write_spec(tmp_path, command=AGENTS[agent](), agent_env=AGENT_ENV.get(agent))
    recorded = record(tmp_path, upstream, **env)
    upstream.stop()
    replayed = flowproof("run", "specs", cwd=tmp_path, env=env)
    return recorded, replayed


@pytest.mark.parametrize("agent", list(AGENTS))
def test_record_and_replay_go_direct_with_every_proxy_variable_set(
    tmp_path: Path, upstream: ScriptedUpstream, dead_proxy: DeadProxy, agent: str
) -> None:
    recorded, replayed = record_and_replay(
        tmp_path, upstream, agent, proxy_environment(dead_proxy.url)
    )
    assert dead_proxy.seen == [], recorded.output
    assert recorded.code == 0, recorded.output
    assert len(upstream.received) == 3  # flowproof's own upstream call went direct too
    assert replayed.code == 0, replayed.output
    assert dead_proxy.seen == []


def test_a_users_own_no_proxy_is_kept_for_the_agent_and_before_each(
    tmp_path: Path, upstream: ScriptedUpstream, dead_proxy: DeadProxy
) -> None:
    """before_each runs with the agent's environment: it writes down NO_PROXY and no_proxy."""
    seen = tmp_path / "no_proxy.txt"
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "flowproof.yaml").write_text(
        f'before_each: printf \'%s\\n\' "$NO_PROXY" "$no_proxy" > {seen}\n'
    )
    env = {**proxy_environment(dead_proxy.url), "NO_PROXY": "corp.example.test"}
    recorded, replayed = record_and_replay(tmp_path, upstream, "openai-python", env)
    assert recorded.code == 0 and replayed.code == 0, recorded.output + replayed.output
    assert dead_proxy.seen == []
    kept = f"corp.example.test,{LOOPBACK}"
    assert seen.read_text().splitlines() == [kept, kept]


def test_a_real_mcp_server_started_at_record_has_loopback_in_no_proxy(
    tmp_path: Path, dead_proxy: DeadProxy
) -> None:
    """The real stdio server is started through `sh`, which writes down what it was given."""
    seen = tmp_path / "server_no_proxy.txt"
    server = shlex.join(fx.tools_server_argv())
    wrapped = f'printf "%s\\n" "$NO_PROXY" "$no_proxy" > {seen}; exec {server}'
    mcp.write_spec(
        tmp_path, mcp.python_agent("classic"), mcp.stdio(["sh", "-c", wrapped]), mcp.TASK[:2]
    )
    env = {
        **proxy_environment(dead_proxy.url),
        "no_proxy": "corp.example.test",
        "FLOWPROOF_AGENT_UPSTREAM": "http://127.0.0.1:9",  # no model: never contacted
        "FLOWPROOF_AGENT_KEY": "sk-test-mcp-0123456789",
    }
    recorded = flowproof("record", "specs", cwd=tmp_path, env=env)
    assert recorded.code == 0, recorded.output
    assert dead_proxy.seen == []
    kept = f"corp.example.test,{LOOPBACK}"
    assert seen.read_text().splitlines() == [kept, kept]


def test_doctor_names_the_proxy_variables_by_host_and_never_their_credentials(
    tmp_path: Path, dead_proxy: DeadProxy
) -> None:
    host = dead_proxy.url.removeprefix("http://")
    env = {
        **proxy_environment(f"http://casey:{PROXY_PASSWORD}@{host}"),
        "no_proxy": "corp.example.test",
    }
    result = flowproof(
        "doctor", "--agent", agent_command("openai_chat_agent.py"), cwd=tmp_path, env=env
    )
    assert result.code == 0, result.output
    assert dead_proxy.seen == []
    shown = " ".join(result.output.split())
    assert "1 model request arrived at flowproof's proxy" in shown
    assert (
        "Proxy variables set for the agent: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, http_proxy, "
        f"https_proxy, all_proxy ({host})." in shown
    )
    assert (
        "flowproof added 127.0.0.1, localhost and ::1 to the agent's NO_PROXY and no_proxy, "
        "after its own entries (corp.example.test), so its calls to flowproof's proxy and MCP "
        "stand-ins on loopback go direct" in shown
    )
    assert PROXY_PASSWORD not in result.output and "casey" not in result.output

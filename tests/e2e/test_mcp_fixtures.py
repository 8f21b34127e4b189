"""The MCP fixtures work on their own: each test agent against the real servers, no flowproof.

The flowproof MCP tests put flowproof between these agents and these servers; these smoke tests
prove the pieces are sound first, so a failure there is flowproof's. Every agent finds its
server the way flowproof tells it to (FLOWPROOF_MCP_SERVER_<NAME> or FLOWPROOF_MCP_URL_<NAME>),
and every server is a real process on a real pipe or loopback socket.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests import mcp_servers as fx
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

pytestmark = pytest.mark.e2e
NODE_MISSING = fx.node_mcp_missing()
needs_node = pytest.mark.skipif(NODE_MISSING is not None, reason=NODE_MISSING or "")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def results(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith("RESULT ")]

    def notified(self, kind: str) -> list[dict]:
        prefix = f"NOTIFY {kind} "
        return [
            json.loads(line[len(prefix) :])
            for line in self.stdout.splitlines()
            if line.startswith(prefix)
        ]

    def answered(self) -> list[int]:
        """The indexes of the calls, in the order their answers arrived."""
        return [
            int(line.split()[1])
            for line in self.stderr.splitlines()
            if line.startswith("ANSWERED ")
        ]


def run_agent(argv: list[str], env: dict[str, str], timeout: float = 60) -> Run:
    done = subprocess.run(
        argv, env=fx.clean_agent_env(**env), capture_output=True, text=True, timeout=timeout
    )
    return Run(done.returncode, done.stdout, done.stderr)


def logged(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def python_agent(mode: str, *extra: str) -> list[str]:
    return [sys.executable, str(fx.PY_MCP_AGENT), "--server", "tools", "--mode", mode, *extra]


def node_agent(server: str, *extra: str) -> list[str]:
    return ["node", str(fx.NODE_MCP_AGENT), "--server", server, *extra]


@pytest.fixture(scope="module")
def tools_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[fx.HttpServer, Path]]:
    """One streamable-HTTP tools_server for the module, with its call log."""
    log = tmp_path_factory.mktemp("tools-http") / "calls.jsonl"
    with fx.http_server(lambda port: fx.tools_server_argv(log=log, http=port)) as server:
        yield server, log


@pytest.fixture(scope="module")
def everything_http() -> Iterator[fx.HttpServer]:
    if NODE_MISSING:
        pytest.skip(NODE_MISSING)
    with fx.http_server(fx.everything_argv) as server:
        yield server


def tools_target(transport: str, tmp_path: Path, tools_http) -> tuple[dict[str, str], Path]:
    """The contract environment naming server `tools` over `transport`, and its call log."""
    if transport == "stdio":
        log = tmp_path / 'the agent\'s "call" log $HOME.jsonl'  # quoting must survive the split
        return fx.stdio_env("tools", fx.tools_server_argv(log=log)), log
    server, log = tools_http
    return fx.url_env("tools", server.url), log


def tools_task(tag: str) -> list[dict]:
    return [
        {"name": "echo", "arguments": {"text": f"hello {tag}"}},
        {"name": "add", "arguments": {"a": 2, "b": 40}},
        {"name": "notify", "arguments": {"text": f"ping {tag}"}},
        {"name": "ask_model", "arguments": {"prompt": f"capital of {tag}?"}},
        {"name": "list_roots", "arguments": {}},
        {"name": "no_such_tool", "arguments": {}},
    ]


def tools_results(tag: str) -> list[str]:
    """What both MCP client agents print for tools_task(tag): the same bytes, SDK aside."""

    def ok(text_: str, structured: object) -> str:
        return json.dumps(
            {
                "content": [{"type": "text", "text": text_}],
                "structuredContent": {"result": structured},
            },
            separators=(",", ":"),
        )

    return [
        f"RESULT echo {ok(f'hello {tag}', f'hello {tag}')}",
        f"RESULT add {ok('42', 42)}",
        f"RESULT notify {ok(f'notified ping {tag}', f'notified ping {tag}')}",
        f"RESULT ask_model {ok(f'sampled: capital of {tag}?', f'sampled: capital of {tag}?')}",
        f"RESULT list_roots {ok('file:///tmp/flowproof-roots', ['file:///tmp/flowproof-roots'])}",
        'RESULT no_such_tool {"content":[{"type":"text","text":"Unknown tool: no_such_tool"}],"isError":true}',
    ]


def check_tools_run(run: Run, tag: str, log: Path) -> None:
    assert run.code == 0, run.stderr
    assert run.results() == tools_results(tag), run.stdout
    assert [n["data"] for n in run.notified("log")] == [f"notify: ping {tag}"], run.stdout
    assert [(n["call"], n["message"]) for n in run.notified("progress")] == [
        (2, f"notified ping {tag}")
    ], run.stdout
    tagged = [entry["tool"] for entry in logged(log) if tag in json.dumps(entry)]
    assert tagged == ["echo", "notify", "ask_model"], logged(log)  # each ran once, in order
    tools = [entry["tool"] for entry in logged(log)]
    assert "add" in tools and "list_roots" in tools, tools
    assert "no_such_tool" not in tools


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(
    ("mode", "protocol"), [("modern", "2026-07-28"), ("classic", "2025-11-25")]
)
def test_python_agent_against_tools_server(
    mode: str, protocol: str, transport: str, tmp_path: Path, tools_http
) -> None:
    """modern (mcp.Client: server/discover, which our server accepts) and classic
    (initialize) both run every tool, sampling and roots included, and see both notifications."""
    env, log = tools_target(transport, tmp_path, tools_http)
    tag = f"py-{mode}-{transport}"
    run = run_agent(python_agent(mode), {**env, "FLOWPROOF_PROMPT": json.dumps(tools_task(tag))})
    assert f"protocol {protocol}" in run.stderr.splitlines(), run.stderr
    check_tools_run(run, tag, log)


@needs_node
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_node_agent_against_tools_server(transport: str, tmp_path: Path, tools_http) -> None:
    """The npm SDK's client prints exactly what the Python one does for the same task."""
    env, log = tools_target(transport, tmp_path, tools_http)
    tag = f"node-{transport}"
    run = run_agent(node_agent("tools", "--calls", json.dumps(tools_task(tag))), env)
    assert "MCP-ERROR" not in run.stderr, run.stderr
    check_tools_run(run, tag, log)


@needs_node
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_node_agent_against_server_everything(transport: str, everything_http) -> None:
    """server-everything: echo, sampling (its trigger-sampling-request asks our client's
    fixed sampler), roots (it asks for them after initialized, unprompted) and progress."""
    argv = fx.everything_argv()
    env = (
        fx.stdio_env("everything", argv)
        if transport == "stdio"
        else fx.url_env("everything", everything_http.url)
    )
    task = [
        {"name": "echo", "arguments": {"message": "hi there"}},
        {"name": "trigger-sampling-request", "arguments": {"prompt": "say hi", "maxTokens": 20}},
        {"name": "get-roots-list", "arguments": {}},
        {"name": "trigger-long-running-operation", "arguments": {"duration": 0.4, "steps": 2}},
    ]
    run = run_agent(node_agent("everything"), {**env, "FLOWPROOF_PROMPT": json.dumps(task)})
    assert run.code == 0, run.stderr
    results = run.results()
    assert results[0] == 'RESULT echo {"content":[{"type":"text","text":"Echo: hi there"}]}'
    assert "sampled: Resource trigger-sampling-request context: say hi" in results[1]
    assert "flowproof-fixed-sampler" in results[1]
    assert "file:///tmp/flowproof-roots" in results[2]
    assert results[3].startswith("RESULT trigger-long-running-operation ")
    assert "Steps: 2." in results[3]
    # server-everything sends its last progress notification right before the result; the npm
    # SDK settles the result at once but runs notification handlers a microtask later, so that
    # last one, read in the same chunk, is often dropped ("unknown token"). The first is not.
    progress = [(n["call"], n["progress"], n["total"]) for n in run.notified("progress")]
    assert progress in ([(3, 1, 2)], [(3, 1, 2), (3, 2, 2)]), run.stdout


@needs_node
def test_python_modern_agent_falls_back_on_server_everything() -> None:
    """server-everything refuses server/discover (-32601), so mcp.Client falls back to
    initialize; sampling then comes as a real sampling/createMessage request mid-call."""
    task = [
        {"name": "echo", "arguments": {"message": "fallback"}},
        {"name": "trigger-sampling-request", "arguments": {"prompt": "hey", "maxTokens": 20}},
    ]
    run = run_agent(
        python_agent("modern", "--calls", json.dumps(task)),
        fx.stdio_env("tools", fx.everything_argv()),
    )
    assert run.code == 0, run.stderr
    assert "protocol 2025-11-25" in run.stderr.splitlines(), run.stderr
    results = run.results()
    assert results[0] == 'RESULT echo {"content":[{"type":"text","text":"Echo: fallback"}]}'
    assert "sampled: Resource trigger-sampling-request context: hey" in results[1], results


SLOW_THEN_FAST = [
    {"name": "slow_echo", "arguments": {"text": "slow", "delay_ms": 600}},
    {"name": "slow_echo", "arguments": {"text": "fast", "delay_ms": 30}},
]


@pytest.mark.parametrize(
    "client",
    [
        pytest.param("python-modern"),
        pytest.param("python-classic"),
        pytest.param("node", marks=needs_node),
    ],
)
def test_parallel_calls_are_answered_out_of_order(client: str, tmp_path: Path) -> None:
    """Two calls pipelined on one stdio session: the server runs them concurrently and the
    fast one's answer comes back first, while the agent still prints results in task order."""
    log = tmp_path / "calls.jsonl"
    env = {
        **fx.stdio_env("tools", fx.tools_server_argv(log=log)),
        "FLOWPROOF_PROMPT": json.dumps(SLOW_THEN_FAST),
    }
    argv = node_agent("tools") if client == "node" else python_agent(client.split("-")[1])
    run = run_agent([*argv, "--parallel"], env)
    assert run.code == 0, run.stderr
    assert run.answered() == [1, 0], run.stderr  # requested 0 then 1; answered 1 then 0
    assert [line.split('"text":"')[1].split('"')[0] for line in run.results()] == ["slow", "fast"]
    slow, fast = logged(log)
    assert (slow["arguments"]["text"], fast["arguments"]["text"]) == ("slow", "fast")
    # the fast call reached the server while the slow one was still sleeping
    assert fast["at"] - slow["at"] < 0.4, (slow, fast)


def test_sequential_calls_are_answered_in_order(tools_http) -> None:
    """The control for the test above: without --parallel the slow call is answered first."""
    server, _log = tools_http
    env = {**fx.url_env("tools", server.url), "FLOWPROOF_PROMPT": json.dumps(SLOW_THEN_FAST)}
    run = run_agent(python_agent("classic"), env)
    assert run.code == 0, run.stderr
    assert run.answered() == [0, 1], run.stderr


def test_http_servers_listen_on_loopback_only(tools_http, everything_http) -> None:
    for server in (tools_http[0], everything_http):
        listening = [
            c.laddr
            for c in psutil.Process(server.process.pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening, f"nothing listens in {server.process.args}"
        assert {(a.ip, a.port) for a in listening} == {("127.0.0.1", server.port)}, listening


def test_agents_report_a_missing_server_clearly() -> None:
    for argv in (
        python_agent("modern"),
        [sys.executable, str(fx.GUARD_AGENT), "--server", "tools"],
    ):
        run = run_agent(argv, {"FLOWPROOF_PROMPT": "[]"})
        assert run.code == 2, run.stderr
        assert "neither FLOWPROOF_MCP_SERVER_TOOLS nor FLOWPROOF_MCP_URL_TOOLS is set" in run.stderr


def sum_checked(body: dict) -> dict:
    """The model's second turn: it answers from the tool output it was handed back."""
    dumped = json.dumps(body)
    return text("The sum is 42." if "42" in dumped else "I never saw the sum.")


def model_env(upstream: ScriptedUpstream) -> dict[str, str]:
    return {"OPENAI_BASE_URL": upstream.base_url, "OPENAI_API_KEY": "sk-test-fixture"}


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_openai_agents_agent_uses_the_mcp_tools(
    transport: str, tmp_path: Path, tools_http, upstream: ScriptedUpstream
) -> None:
    env, log = tools_target(transport, tmp_path, tools_http)
    upstream.script = [calls(tool_call("add", {"a": 19, "b": 23}, "call_add")), sum_checked]
    run = run_agent(
        [sys.executable, str(fx.AGENTS_MCP_AGENT), "--server", "tools"],
        {**env, **model_env(upstream), "FLOWPROOF_PROMPT": "What is 19 + 23?"},
    )
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "The sum is 42.", run.stdout
    assert [r.path for r in upstream.received] == ["/v1/responses", "/v1/responses"]
    offered = {tool["name"] for tool in upstream.received[0].body["tools"]}
    assert {"echo", "add", "delete_file", "ask_model"} <= offered, offered
    assert {"tool": "add", "arguments": {"a": 19, "b": 23}} in [
        {"tool": e["tool"], "arguments": e["arguments"]} for e in logged(log)
    ]


def guard_script(victim: str = "/srv/guard-victim.txt") -> list:
    return [
        calls(
            tool_call("delete_file", {"path": victim}, "call_delete"),
            tool_call("add", {"a": 40, "b": 2}, "call_add"),
        ),
        text("Planned; nothing deleted."),
    ]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_guard_agent_refuses_in_code(
    transport: str, tmp_path: Path, tools_http, upstream: ScriptedUpstream
) -> None:
    """--refuse delete_file: the model is told no, and the server never hears of it."""
    env, log = tools_target(transport, tmp_path, tools_http)
    upstream.script = guard_script()
    run = run_agent(
        [sys.executable, str(fx.GUARD_AGENT), "--server", "tools", "--refuse", "delete_file"],
        {**env, **model_env(upstream), "FLOWPROOF_PROMPT": "Tidy the server."},
    )
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "Planned; nothing deleted."
    assert [r.path for r in upstream.received] == ["/v1/chat/completions"] * 2
    handed_back = {
        m["tool_call_id"]: m["content"]
        for m in upstream.received[1].body["messages"]
        if m["role"] == "tool"
    }
    assert handed_back == {
        "call_delete": '{"error": "refused: delete_file is not allowed in plan mode"}',
        "call_add": "42",
    }
    entries = logged(log)
    assert not any("guard-victim" in json.dumps(e) for e in entries), entries
    assert any(e["tool"] == "add" and e["arguments"] == {"a": 40, "b": 2} for e in entries)


def test_guard_agent_without_refuse_executes_everything(
    tools_http, upstream: ScriptedUpstream
) -> None:
    server, log = tools_http
    upstream.script = guard_script("/srv/unguarded.txt")
    run = run_agent(
        [sys.executable, str(fx.GUARD_AGENT), "--server", "tools"],
        {**fx.url_env("tools", server.url), **model_env(upstream), "FLOWPROOF_PROMPT": "Tidy up."},
    )
    assert run.code == 0, run.stderr
    assert {"tool": "delete_file", "arguments": {"path": "/srv/unguarded.txt"}} in [
        {"tool": e["tool"], "arguments": e["arguments"]} for e in logged(log)
    ]
    tool_messages = [m for m in upstream.received[1].body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["deleted /srv/unguarded.txt", "42"]

"""`flowproof mcp`, driven by the real `mcp` SDK client over stdio: the server is started as a
subprocess (`python -m flowproof mcp`), lists its tools, replays specs whose real openai-SDK
agent passes and diverges (both as data), shows a trace's trajectory, diffs traces, and
refuses to record without an upstream, naming what to set and never the key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import ROOT, agent_command
from tests.e2e.booking import BOOKING_SCRIPT, KEY, write_spec
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e

TOOLS = {"list_specs", "run_specs", "record_spec", "show_trajectory", "diff_traces", "doctor"}
Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@pytest.fixture
def project(recorded: Path) -> Path:
    """The recorded booking flow, a copy whose agent now rewrites the flight id (it diverges),
    and a spec that cannot run."""
    write_spec(recorded, name="regressed", agent_env={"AGENT_BUG": "rewrite-flight-id"})
    shutil.copy(
        recorded / "specs" / "booking.trace.json", recorded / "specs" / "regressed.trace.json"
    )
    (recorded / "broken").mkdir()
    (recorded / "broken" / "bad.yaml").write_text("name: bad\napp: agent\nagent: {}\n")
    return recorded


def server_env(**extra: str) -> dict[str, str]:
    """The test's (cleaned) environment, this checkout first on the import path: the SDK
    would otherwise start the server with a minimal environment of its own."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def session(project: Path, env: dict[str, str], body: Callable[[Call, ClientSession], Any]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "flowproof", "mcp", "--directory", str(project)],
        env=env,
    )

    async def main() -> None:
        with anyio.fail_after(180):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()

                async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                    result = await client.call_tool(tool, arguments)
                    assert not result.is_error, result  # failures are data, not tool errors
                    assert isinstance(result.structured_content, dict), result
                    return result.structured_content

                await body(call, client)

    anyio.run(main)


def test_it_lists_its_tools_and_runs_specs_returning_pass_and_divergence_as_data(
    project: Path,
) -> None:
    async def body(call: Call, client: ClientSession) -> None:
        listed = await client.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        assert all(tool.description for tool in listed.tools)

        specs = await call("list_specs", {})
        assert [(s["spec"], s["recorded"]) for s in specs["specs"]] == [
            ("specs/booking.yaml", True),
            ("specs/regressed.yaml", True),
        ]
        assert specs["specs"][0]["name"] == "Booking assistant books a flight"

        passing = await call("run_specs", {"paths": ["specs/booking.yaml"]})
        assert passing["exit_code"] == 0 and passing["mode"] == "replay"
        (flow,) = passing["flows"]
        assert flow["verdict"] == "pass" and flow["divergence"] is None
        assert flow["trajectory"]["reply"] == "Your flight KQ311 to Nairobi is booked: B-1042."
        assert answered_as_written(project, passing)

        failing = await call("run_specs", {"paths": ["specs"]})
        assert failing["exit_code"] == 1
        verdicts = {f["spec"]: f["verdict"] for f in failing["flows"]}
        assert verdicts == {"specs/booking.yaml": "pass", "specs/regressed.yaml": "fail"}
        divergence = failing["flows"][1]["divergence"]
        assert (divergence["index"], divergence["recorded_index"]) == (3, 3)
        assert divergence["differences"][0]["path"].endswith("flight.id")
        assert divergence["differences"][0]["replayed"] == '"KQ999"'
        assert answered_as_written(project, failing)

        broken = await call("run_specs", {"paths": ["broken"]})
        assert broken["exit_code"] == 2 and broken["flows"] == []
        (problem,) = broken["errors"]
        assert problem["spec"] == "broken/bad.yaml" and "agent" in problem["message"]
        assert answered_as_written(project, broken)

        missing = await call("run_specs", {"paths": ["nowhere"]})
        assert missing["error"]["kind"] == "ConfigError"
        assert "nowhere: no such file or directory" in missing["error"]["message"]

    session(project, server_env(), body)


def answered_as_written(project: Path, answer: dict[str, Any]) -> bool:
    """The tool's answer is the run record it wrote, as `report.json` holds it, and its path."""
    written = json.loads((project / answer["run_record"]).read_text(encoding="utf-8"))
    return {key: value for key, value in answer.items() if key != "run_record"} == written


def test_it_shows_a_trajectory_and_diffs_traces(project: Path) -> None:
    async def body(call: Call, client: ClientSession) -> None:
        shown = await call("show_trajectory", {"trace": "specs/booking.trace.json"})
        assert shown["turns"] == 3
        calls = shown["trajectory"]["tool_calls"]
        assert [c["name"] for c in calls] == ["search_flights", "create_booking"]
        assert calls[1]["arguments"]["flight"] == {"id": "KQ311"}
        assert shown["trajectory"]["reply"] == "Your flight KQ311 to Nairobi is booked: B-1042."
        assert [row["turn"] for row in shown["timeline"]] == [1, 2, 3]

        by_spec = await call("show_trajectory", {"trace": "specs/booking.yaml"})
        assert by_spec["trace"] == "specs/booking.trace.json"

        unreadable = await call("show_trajectory", {"trace": "specs/none.trace.json"})
        assert unreadable["error"]["kind"] == "TraceError"

        same = await call(
            "diff_traces", {"old": "specs/booking.trace.json", "new": "specs/regressed.trace.json"}
        )
        assert same["changed"] is False and same["changes"] == []

    session(project, server_env(), body)


def test_it_runs_doctor_on_an_agent_command(project: Path) -> None:
    async def body(call: Call, client: ClientSession) -> None:
        found = await call("doctor", {"command": agent_command("openai_chat_agent.py")})
        assert found["exit_code"] == 0 and found["model_requests"] == 1
        assert found["requests"] == [
            {
                "method": "POST",
                "path": "/v1/chat/completions",
                "served_by": "openai_chat",
                "count": 1,
            }
        ]
        assert found["agent"]["exit_code"] == 0

        refused = await call("doctor", {"command": "true", "mcp": ["no spaces"]})
        assert refused["error"]["kind"] == "usage" and refused["error"]["exit_code"] == 2
        assert "'no spaces' is not an MCP server name" in refused["error"]["message"]

    session(project, server_env(), body)


def test_record_without_an_upstream_is_refused_naming_what_to_set_and_never_the_key(
    project: Path,
) -> None:
    trace = project / "specs" / "booking.trace.json"
    before = trace.read_bytes()

    async def body(call: Call, client: ClientSession) -> None:
        refused = await call("record_spec", {"path": "specs/booking.yaml"})
        assert refused["recorded"] is False
        assert refused["error"]["kind"] == "record_not_set_up"
        message = refused["error"]["message"]
        assert "no upstream: set FLOWPROOF_AGENT_UPSTREAM" in message
        assert "no key" not in message  # the key is set: only the upstream is missing
        assert KEY not in str(refused)

    # Should the refusal ever regress, the record it let through dials a dead loopback proxy,
    # never a provider's public API.
    dead_proxy = "http://127.0.0.1:9"
    env = server_env(FLOWPROOF_AGENT_KEY=KEY, HTTPS_PROXY=dead_proxy, HTTP_PROXY=dead_proxy)
    session(project, env, body)
    assert trace.read_bytes() == before  # nothing was recorded


def test_without_the_sdk_flowproof_mcp_exits_2_saying_how_to_install_it(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    # An `mcp` that cannot be imported, first on the path: as if the extra were not installed.
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n"
    )
    env = server_env(PYTHONPATH=f"{shadow.parent}{os.pathsep}{ROOT}")
    result = subprocess.run(
        [sys.executable, "-m", "flowproof", "mcp"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'flowproof-cli[mcp]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_record_with_an_upstream_writes_the_trace_and_answers_without_the_key(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    env = server_env(FLOWPROOF_AGENT_UPSTREAM=upstream.base_url, FLOWPROOF_AGENT_KEY=KEY)

    async def body(call: Call, client: ClientSession) -> None:
        recorded = await call("record_spec", {"path": "specs/booking.yaml"})
        assert recorded["recorded"] is True, recorded
        flow = recorded["flow"]
        assert flow["mode"] == "record" and flow["verdict"] == "pass"
        assert flow["trace"] == "specs/booking.trace.json"
        assert KEY not in str(recorded)
        written = json.loads((tmp_path / flow["run_record"]).read_text(encoding="utf-8"))
        assert written["mode"] == "record" and written["flows"] == [
            {k: v for k, v in flow.items() if k not in ("mode", "run_record", "reports")}
        ]
        replayed = await call("run_specs", {})
        assert replayed["exit_code"] == 0 and answered_as_written(tmp_path, replayed)

    session(tmp_path, env, body)
    assert len(upstream.received) == 3  # recorded once; the replay asked the upstream nothing
    trace = tmp_path / "specs" / "booking.trace.json"
    assert trace.is_file() and KEY not in trace.read_text()

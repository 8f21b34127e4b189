"""Only the agent can use flowproof's proxy: another process on the machine that finds the port
is refused, at record and at replay, and the run record counts it.

The outsider (tests/agents/outsider.py) is a real process POSTing over a real socket. It knows
the port, as `/proc/net/tcp` would tell anyone, and not the capability flowproof put in the
path of every URL it gave the agent. The flow's command starts it first, then the real
openai-SDK booking agent, so the proxy is up and the flow is running when it knocks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests import mcp_servers as fx
from tests.conftest import agent_command, flowproof
from tests.e2e import test_mcp as mcp
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream, text

FLOW = "Booking assistant books a flight  (specs/booking.yaml)"
REFUSED = (
    "403 "
    '{"error": {"message": "flowproof: this proxy serves only the agent flowproof started, at '
    "the base URL flowproof gave it; the request's path did not start with it\", "
    '"type": "flowproof_error"}}'
)
WARNING = (
    "      warning: tool search_flights is mocked at the model boundary only: the agent still "
    "ran it for real; only what the model was told it returned is replaced\n"
    "      warning: refused requests from outside the agent: 1 (sent to flowproof's proxy or "
    "an MCP stand-in without the flow's capability; none was forwarded, served or recorded)\n"
)


def outsider_first(directory: Path, **env: str) -> Path:
    """The booking spec whose command runs the outsider, then the agent; its log's path."""
    log = directory / "outsider.log"
    write_spec(
        directory,
        command=f"{agent_command('outsider.py')}; {agent_command('openai_chat_agent.py')}",
        agent_env={"OUTSIDER_LOG": str(log), **env},
    )
    return log


def latest_flow_record(project: Path) -> dict:
    latest = max((project / ".flowproof" / "runs").glob("*/report.json"))
    (flow,) = json.loads(latest.read_text())["flows"]
    return flow


def test_an_outsider_at_record_is_refused_never_forwarded_nor_recorded(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    log = outsider_first(tmp_path)
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    assert log.read_text() == REFUSED + "\n"
    # The upstream saw the agent's three turns and nothing of the outsider's.
    assert len(upstream.received) == 3
    assert not any("outsider" in json.dumps(seen.body) for seen in upstream.received)
    trace = (tmp_path / "specs" / "booking.trace.json").read_text()
    assert "outsider" not in trace and len(json.loads(trace)["lanes"]["model"]) == 3
    assert f"PASS  {FLOW} · 3 turns recorded → specs/booking.trace.json\n{WARNING}" in (
        result.stderr
    )
    assert latest_flow_record(tmp_path)["refused_from_outside"] == 1
    # The trace holds the agent's turns only, so the next replay serves every one of them.
    write_spec(tmp_path)
    replay = flowproof("run", "specs", cwd=tmp_path)
    assert replay.code == 0, replay.output
    assert f"PASS  {FLOW} · 3 of 3 turns served\n" in replay.stderr
    assert "outside the agent" not in replay.stderr
    assert latest_flow_record(tmp_path)["refused_from_outside"] == 0


def test_an_outsider_at_replay_cannot_consume_a_recorded_turn(recorded: Path) -> None:
    """The outsider sends the first recorded request itself, read from the committed trace:
    served, it would take turn 1 and leave the agent a divergence."""
    trace = recorded / "specs" / "booking.trace.json"
    log = outsider_first(recorded, OUTSIDER_BODY_FROM=str(trace))
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 0, result.output
    assert log.read_text() == REFUSED + "\n"
    assert f"PASS  {FLOW} · 3 of 3 turns served\n{WARNING}" in result.stderr
    flow = latest_flow_record(recorded)
    assert flow["refused_from_outside"] == 1 and flow["turns"]["served"] == 3


def test_doctor_names_a_request_without_the_capability_and_what_to_change(
    tmp_path: Path,
) -> None:
    log = tmp_path / "outsider.log"
    result = flowproof(
        "doctor",
        "--agent",
        agent_command("outsider.py"),
        "--env",
        f"OUTSIDER_LOG={log}",
        cwd=tmp_path,
    )
    assert result.code == 1, result.output  # nothing the agent sent reached the proxy
    assert log.read_text() == REFUSED + "\n"
    assert ("0 model requests arrived at flowproof's proxy (127.0.0.1:") in result.stderr
    assert (
        "1 request arrived without flowproof's capability and was refused (403):\n"
        "  1 × POST /v1/chat/completions\n"
        "Every URL flowproof gives the agent (the injected base URLs, FLOWPROOF_MCP_URL_<NAME> "
        "and the ${flowproof.*} handles) starts its path with a secret only the agent is "
        "given, so that no other process on the machine can use the proxy. Point the client at "
        "one of them exactly as given, path included: a URL written with the port alone "
        "(http://127.0.0.1:<port>/v1) lacks it, and so does one a client rebuilt from the host "
        "and port of the URL it was given (docs/wiring.md).\n"
    ) in result.stderr
    assert "Zero means the agent's model client did not use" not in result.stderr


def test_the_capability_an_agent_echoes_reaches_no_output(recorded: Path) -> None:
    """An agent may print its base URL (a connection error names it): the capability in it is
    redacted from the console and the run record, as a key would be."""
    seen = recorded / "base_url.txt"
    agent = recorded / "echo_base_url.sh"
    agent.write_text(
        f'echo "$OPENAI_BASE_URL" > {seen}\necho "cannot reach $OPENAI_BASE_URL" >&2\nexit 1\n'
    )
    write_spec(recorded, command=f"/bin/sh {agent}")
    result = flowproof("run", "specs", cwd=recorded)
    assert result.code == 1, result.output
    token = seen.read_text().strip().split("/")[3]
    assert len(token) == 24
    record = max((recorded / ".flowproof" / "runs").glob("*/report.json")).read_text()
    for channel in (result.stdout, result.stderr, record):
        assert token not in channel
    assert "cannot reach http://127.0.0.1:" in result.stderr
    assert "/[redacted proxy capability]/v1" in result.stderr
    assert "/[redacted proxy capability]/v1" in record


def test_an_outsider_at_an_mcp_stand_in_reaches_no_server_at_record_nor_a_lane_at_replay(
    tmp_path: Path,
) -> None:
    log = tmp_path / "outsider.log"
    outsider = f"OUTSIDER_LOG={log} OUTSIDER_TARGET=mcp:tools {agent_command('outsider.py')}; "
    server_log = tmp_path / "server-http.log"
    argv = lambda port: fx.tools_server_argv(log=server_log, http=port)  # noqa: E731
    with fx.http_server(argv) as server:
        agent = outsider + mcp.python_agent("classic")
        mcp.write_spec(tmp_path, agent, mcp.url(server.url), mcp.TASK, tools=mcp.MOCKED_DELETE)
        recorded = mcp.record(tmp_path)
        assert recorded.code == 0, recorded.output
    # The real server saw the agent's calls only; the lane holds nothing of the outsider's.
    assert [entry["tool"] for entry in mcp.logged(server_log)] == ["echo", "add"]
    assert "outsider" not in json.dumps(mcp.lane(tmp_path))
    assert latest_flow_record(tmp_path)["refused_from_outside"] == 1
    replayed = mcp.replay(tmp_path)  # the server has stopped; the outsider knocks again
    assert replayed.code == 0, replayed.output
    assert latest_flow_record(tmp_path)["refused_from_outside"] == 1
    refusals = log.read_text().splitlines()
    assert len(refusals) == 2 and all(line.startswith("403 ") for line in refusals)
    assert "this MCP stand-in serves only the agent flowproof started" in refusals[0]


def test_an_agent_whose_client_drops_the_path_fails_the_record_saying_what_to_change(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """Its only request lacks the capability: refused like a stranger's, and the flow says
    why nothing arrived instead of blaming the variables."""
    upstream.script = BOOKING_SCRIPT
    log = tmp_path / "outsider.log"
    write_spec(tmp_path, command=agent_command("outsider.py"), agent_env={"OUTSIDER_LOG": str(log)})
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert log.read_text() == REFUSED + "\n" and upstream.received == []
    assert (
        "      the agent made no model request flowproof could serve: 1 request reached the "
        "proxy without the flow's capability and was refused (403). Its client most likely "
        "builds its URL from the host and port alone; give it the injected base URL or "
        "${flowproof.proxy_url} exactly as given, path included (docs/wiring.md)\n"
    ) in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


def test_a_capability_the_agent_tells_the_model_keeps_the_trace_from_being_written(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = [text("Noted.")]
    agent = tmp_path / "tells_its_base_url.py"
    agent.write_text(
        "import json, os, urllib.request\n"
        "base = os.environ['OPENAI_BASE_URL']\n"
        "body = {'model': 'gpt-4o-mini', 'messages': [{'role': 'user', 'content': base}]}\n"
        "request = urllib.request.Request(base + '/chat/completions', json.dumps(body).encode(),"
        " {'Content-Type': 'application/json'})\n"
        "print(urllib.request.urlopen(request).read().decode())\n"
    )
    write_spec(tmp_path, command=f"{sys.executable} {agent}")
    result = record(tmp_path, upstream)
    assert result.code == 1, result.output
    assert (
        "      the trace would hold the value of proxy capability at "
        "lanes.model[0].request.messages[0].content, so it was not written"
    ) in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()

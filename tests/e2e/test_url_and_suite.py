"""Driving a running service through `url:`, and suite settings (flowproof.yaml)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import AGENTS, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_service(model_port: int, **extra: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": f"http://127.0.0.1:{model_port}/v1", **extra}
    process = subprocess.Popen(
        [sys.executable, str(AGENTS / "service_agent.py"), str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the service did not start")


@pytest.fixture
def service() -> Iterator[tuple[int, int]]:
    """(service port, proxy port): a service started pointing at the proxy's fixed port."""
    proxy_port = free_port()
    process, port = start_service(proxy_port)
    yield port, proxy_port
    process.kill()
    process.wait()


def write_url_spec(
    directory: Path, service_port: int, proxy_port: int, route: str = "task", body: str = ""
) -> Path:
    spec = textwrap.dedent(f"""\
        name: Booking service books a flight
        app: agent
        agent:
          url: http://127.0.0.1:{service_port}/{route}
          proxy_port: {proxy_port}
          {body}
          headers:
            Authorization: Bearer ${{DEV_TOKEN}}
        tools:
          - name: search_flights
          - name: create_booking
        steps:
          - prompt: Book me a flight to Nairobi
          - assert_tool_call: create_booking where flight.id equals KQ311
          - assert: reply contains booked
        """)
    path = directory / "specs" / "service.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec)
    return path


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("task", ""),  # {"prompt": ...}
        ("chat", 'body: {input: {text: "{{prompt}}"}, session: "s-{{conversation_id}}"}'),
    ],
)
def test_a_running_service_records_and_replays(
    tmp_path: Path, upstream: ScriptedUpstream, service: tuple[int, int], route: str, body: str
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_url_spec(tmp_path, *service, route, body)
    result = record(tmp_path, upstream, DEV_TOKEN="t0ken-value")
    assert result.code == 0, result.output
    assert "t0ken-value" not in (tmp_path / "specs" / "service.trace.json").read_text()
    upstream.stop()
    replay = flowproof("run", "specs", cwd=tmp_path, env={"DEV_TOKEN": "other"})
    assert replay.code == 0, replay.output
    assert "3 of 3 turns served" in replay.stderr


def test_a_replay_short_of_turns_names_the_port_to_point_at(
    tmp_path: Path, upstream: ScriptedUpstream, service: tuple[int, int]
) -> None:
    upstream.script = BOOKING_SCRIPT
    service_port, proxy_port = service
    write_url_spec(tmp_path, service_port, proxy_port)
    assert record(tmp_path, upstream, DEV_TOKEN="x").code == 0
    upstream.stop()
    process, early_port = start_service(proxy_port, SERVICE_BUG="answer-early")
    try:
        write_url_spec(tmp_path, early_port, proxy_port)
        spec = tmp_path / "specs" / "service.yaml"
        spec.write_text(spec.read_text().split("  - assert_tool_call")[0])  # judge turns only
        replay = flowproof("run", "specs", cwd=tmp_path, env={"DEV_TOKEN": "x"})
    finally:
        process.kill()
        process.wait()
    assert replay.code == 1, replay.output
    assert "served 1 of 3 recorded turns" in replay.stderr
    assert f"start it with OPENAI_BASE_URL=http://127.0.0.1:{proxy_port}/v1" in replay.stderr


def test_a_service_pointing_elsewhere_fails_with_the_port_to_point_at(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    proxy_port = free_port()
    process, port = start_service(free_port())  # its model URL goes nowhere near the proxy
    try:
        write_url_spec(tmp_path, port, proxy_port)
        result = record(tmp_path, upstream, DEV_TOKEN="x")
    finally:
        process.kill()
        process.wait()
    assert result.code == 1, result.output
    assert "the service made no model requests to flowproof's proxy" in result.stderr
    assert f"start it with OPENAI_BASE_URL=http://127.0.0.1:{proxy_port}/v1" in result.stderr
    assert not (tmp_path / "specs" / "service.trace.json").exists()


def test_a_busy_proxy_port_fails_that_flow_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        spec = write_spec(tmp_path)
        spec.write_text(
            spec.read_text().replace("  env: {}\n", f"  env: {{}}\n  proxy_port: {busy}\n")
        )
        result = flowproof("record", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert (
        f"proxy_port {busy} is busy: flowproof could not listen on 127.0.0.1:{busy}"
        in result.stderr
    )


def test_suite_env_applies_to_every_flow_before_agent_env(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, agent_env={"AGENT_ECHO_SETTING": "1"})
    (tmp_path / "specs" / "flowproof.yaml").write_text(
        "env:\n  AGENT_SETTING: from-suite\n  AGENT_BUG: rewrite-flight-id\n"
    )
    result = record(tmp_path, upstream)
    # the suite's AGENT_BUG reached the agent: its echoed history carries KQ999
    assert result.code == 0, result.output
    assert "KQ999" in (tmp_path / "specs" / "booking.trace.json").read_text()


def test_a_failing_before_each_fails_the_flow_with_its_output(tmp_path: Path) -> None:
    write_spec(tmp_path)
    (tmp_path / "specs" / "flowproof.yaml").write_text(
        "before_each: echo resetting the service; echo database locked >&2; exit 3\n"
    )
    result = flowproof("record", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert (
        "before_each `echo resetting the service; echo database locked >&2; exit 3` exited "
        "with code 3, so the flow did not run; its output ended with:"
    ) in result.stderr
    assert "| database locked" in result.stderr


def test_a_malformed_suite_file_is_a_spec_error(tmp_path: Path) -> None:
    write_spec(tmp_path)
    (tmp_path / "specs" / "flowproof.yaml").write_text("before_eech: ./reset\n")
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2
    assert (
        "specs/flowproof.yaml:1: unknown key 'before_eech' in the spec; did you mean "
        "'before_each'?" in result.stderr
    )

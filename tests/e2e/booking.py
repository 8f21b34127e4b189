"""The booking flow most end-to-end tests share: spec writer, scripted model, record helper."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.conftest import CliResult, agent_command, flowproof
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

KEY = "sk-test-secret-key-0123456789"
BOOKING_SCRIPT = [
    calls(tool_call("search_flights", {"destination": "NBO", "date": "2026-12-01"})),
    calls(tool_call("create_booking", {"flight": {"id": "KQ311"}, "passenger": {"name": "Casey"}})),
    text("Your flight KQ311 to Nairobi is booked: B-1042."),
]


def write_spec(
    directory: Path,
    *,
    agent_env: dict[str, str] | None = None,
    timeout: float | None = None,
    extra_steps: str = "",
    name: str = "booking",
    command: str | None = None,
    title: str = "Booking assistant books a flight",
) -> Path:
    """The booking flow (search_flights mocked, create_booking declared) for any agent
    `command` (default: the openai-SDK agent), written to specs/<name>.yaml."""
    env_block = "".join(f'\n    {k}: "{v}"' for k, v in (agent_env or {}).items())
    spec = textwrap.dedent(f"""\
        name: {title}
        app: agent
        agent:
          command: "{command or agent_command("openai_chat_agent.py")}"
          env: {{}}
        """)
    if env_block:  # added after dedent: its lines are indented differently from the template
        spec = spec.replace("  env: {}\n", f"  env:{env_block}\n")
    if timeout is not None:
        spec += f"  timeout: {timeout}\n"
    spec += (
        textwrap.dedent("""\
        tools:
          - name: search_flights
            result: { flights: [ { id: KQ311, dest: NBO } ] }
          - name: create_booking
        steps:
          - prompt: Book me a flight to Nairobi tomorrow
        """)
        + extra_steps
    )
    path = directory / "specs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec)
    return path


def record(tmp_path: Path, upstream: ScriptedUpstream, **env: str) -> CliResult:
    """Record every spec under tmp_path/specs, then check no trace holds a key or header."""
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY, **env},
    )
    for trace in (tmp_path / "specs").rglob("*.trace.json"):
        written = trace.read_text()
        assert KEY not in written and "Authorization" not in written, f"{trace} holds a secret"
    return result


def paths_sent(log: Path) -> list[str]:
    """The paths an agent's client wrote to `log` (AGENT_PATHS_FILE), each checked to start
    with the flow's capability, which is taken off: the part of the path the client built."""
    paths = log.read_text().split()
    capabilities = {path.split("/", 2)[1] for path in paths}
    assert len(capabilities) == 1 and len(capabilities.pop()) == 24, paths
    return ["/" + path.split("/", 2)[2] for path in paths]

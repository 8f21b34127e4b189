"""A record key that an agent echoes into its stderr never reaches any of flowproof's output
channels: the console, GitHub annotations and job summary, the run record, and the HTML,
markdown and JUnit reports. Each channel is shown to carry the failure (with the marker) so
the absence of the key is not vacuous."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, agent_command, flowproof

KEY = "sk-live-echoed-0123456789abcdef"
FIXTURE = ROOT / "tests" / "data" / "traces" / "v1" / "openai_chat-demo.trace.json"


def write_echo_spec(project: Path) -> None:
    specs = project / "specs"
    specs.mkdir(parents=True)
    (specs / "echo.yaml").write_text(
        "name: An agent that prints its configuration and fails\n"
        "app: agent\n"
        f'agent:\n  command: "{agent_command("echo_agent.py")}"\n'
        "steps:\n  - prompt: Book me a flight\n"
    )
    shutil.copyfile(FIXTURE, specs / "echo.trace.json")  # replay starts; the agent fails first


@pytest.mark.parametrize(
    ("command", "variable"),
    [("run", "OPENAI_API_KEY"), ("record", "FLOWPROOF_AGENT_KEY")],
)
def test_a_key_the_agent_echoes_reaches_no_output_channel(
    tmp_path: Path, command: str, variable: str
) -> None:
    write_echo_spec(tmp_path)
    summary = tmp_path / "summary.md"
    env = {
        variable: KEY,
        "AGENT_ECHO": KEY,
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "FLOWPROOF_AGENT_UPSTREAM": "http://127.0.0.1:9/v1",  # never reached: the agent fails first
    }
    if command == "record":
        (tmp_path / "specs" / "echo.trace.json").unlink()
    result = flowproof(command, "specs", cwd=tmp_path, env=env)
    assert result.code == 1, result.output
    marker = f"key=[redacted {variable}]"
    assert marker in result.stderr  # the console carries the failure, redacted
    assert "::error file=" in result.stdout and marker in result.stdout  # annotation, redacted
    assert marker in summary.read_text()
    reported = flowproof(
        "report",
        "--html",
        "r.html",
        "--markdown",
        "r.md",
        "--junit",
        "j.xml",
        cwd=tmp_path,
        env={variable: KEY},
    )
    assert reported.code == 0, reported.output
    (record,) = (tmp_path / ".flowproof" / "runs").glob("*/report.json")
    channels = {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "step summary": summary.read_text(),
        "run record": record.read_text(),
        **{name: (tmp_path / name).read_text() for name in ("r.html", "r.md", "j.xml")},
    }
    for name, text in channels.items():
        assert KEY not in text, f"the key reached the {name}"
    assert marker in channels["run record"] and marker in channels["j.xml"]

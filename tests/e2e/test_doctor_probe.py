"""`flowproof doctor` leads a real agent past its first request: the first request that offers
tools is answered with a call to a tool the agent does not offer, so what the agent adds from
its second request on is reported too; an agent that stops on that call is run again with text.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CliResult, agent_command, flowproof


def doctor_late_tools_agent(tmp_path: Path) -> CliResult:
    """Doctor on an agent that adds a tool and a per-run id from its second request on, in a
    project and a HOME of its own."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return flowproof(
        "doctor",
        "--agent",
        agent_command("late_tools_agent.py"),
        cwd=project,
        env={"HOME": str(home)},
    )


def test_doctor_reports_what_appears_only_from_the_second_request(tmp_path: Path) -> None:
    result = doctor_late_tools_agent(tmp_path)
    output = result.stderr
    assert result.code == 0, result.output
    assert "2 model requests arrived at flowproof's proxy" in output
    assert (
        "Request 1 was answered with a call to flowproof_doctor_probe, a tool the agent does not "
        "offer (so nothing runs)"
    ) in output
    assert "a per-run id at metadata.turn_id: request 2 at metadata.turn_id" in output
    assert "Declare them in the spec (docs/specs.md):\n  ignore_fields: [metadata.turn_id]\n" in (
        output
    )
    assert "the home directory" not in output  # in request 2, but normalised by default
    assert "The agent exited with code 0." in output


def test_a_slug_of_the_working_directory_needs_no_declaration_and_names_no_agent(
    tmp_path: Path,
) -> None:
    """The agent's second request names per-project state by the slug of its working
    directory, which normalisation covers by default: nothing to declare, no CLI's variable."""
    result = doctor_late_tools_agent(tmp_path)
    assert result.code == 0, result.output
    assert "2 model requests arrived" in result.stderr
    assert "slug" not in result.stderr and "the working directory" not in result.stderr
    assert "CLAUDE" not in result.stderr


def test_an_agent_that_stops_on_the_probe_is_run_again_answered_with_text(
    tmp_path: Path,
) -> None:
    """openai_chat_agent.py looks a tool up by name and raises on one it does not have."""
    result = flowproof("doctor", "--agent", agent_command("openai_chat_agent.py"), cwd=tmp_path)
    assert result.code == 0, result.output
    assert (
        "The agent ended with an error when asked for flowproof_doctor_probe, a tool it does not "
        "offer, so doctor ran it again answering every request with text"
    ) in result.stderr
    assert "1 model request arrived at flowproof's proxy" in result.stderr
    assert "The agent exited with code 0." in result.stderr

"""A guard on a tool the agent never offered the model (`assert_no_tool_call: send_emial`)
could never fail: with no `tools:` entry declaring it and no call of it, the step is refused
(exit 2) at its line, with a did-you-mean from the tools the recorded requests offer. Real
agents on the real `openai` and `anthropic` SDKs, the scripted upstream, the real CLI."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import CliResult, agent_command, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e

AGENTS = {"openai": "openai_chat_agent.py", "anthropic": "anthropic_agent.py"}
SEARCH_MOCKED = """\
tools:
  - name: search_flights   # its real result is volatile: pinned, so the flow replays
    result: { flights: [ { id: KQ311, dest: NBO } ] }
"""


def write_spec(directory: Path, agent: str, steps: str, tools: str = "") -> Path:
    spec = textwrap.dedent(f"""\
        name: Booking guard
        app: agent
        agent:
          command: "{agent_command(AGENTS[agent])}"
        """)
    spec += tools
    spec += "steps:\n  - prompt: Book me a flight to Nairobi tomorrow\n" + steps
    path = directory / "specs" / "booking.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec)
    return path


def record(directory: Path) -> CliResult:
    upstream = ScriptedUpstream(script=list(BOOKING_SCRIPT))
    upstream.start()
    try:
        return flowproof(
            "record",
            "specs",
            cwd=directory,
            env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY},
        )
    finally:
        upstream.stop()


@pytest.mark.parametrize("agent", ["openai", "anthropic"])
def test_a_misspelt_guard_fails_the_replay_with_did_you_mean(tmp_path: Path, agent: str) -> None:
    write_spec(tmp_path, agent, "  - assert_tool_call: create_booking\n", SEARCH_MOCKED)
    recorded = record(tmp_path)
    assert recorded.code == 0, recorded.output
    spec = write_spec(
        tmp_path,
        agent,
        "  - assert_tool_call: create_booking\n  - assert_no_tool_call: creat_booking\n",
        SEARCH_MOCKED,
    )
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2, result.output
    assert (
        f"{spec.relative_to(tmp_path)}:11: step 3 (assert_no_tool_call) names tool "
        "'creat_booking', which the agent never offered the model and no tools: entry declares"
    ) in result.output
    assert "did you mean 'create_booking'?" in result.output


def test_a_guard_naming_nothing_like_an_offered_tool_lists_what_was_offered(
    tmp_path: Path,
) -> None:
    write_spec(tmp_path, "anthropic", "  - assert_no_tool_call: send_emial\n")
    result = record(tmp_path)
    assert result.code == 2, result.output
    assert "names tool 'send_emial', which the agent never offered" in result.output
    assert "the tools it offered: search_flights, create_booking" in result.output
    assert "declare it under `tools:`" in result.output
    assert not (tmp_path / "specs" / "booking.trace.json").exists()


def test_a_tool_withheld_on_purpose_is_declared_and_its_guard_passes(tmp_path: Path) -> None:
    tools = SEARCH_MOCKED + "  - name: transfer_funds   # never offered to the model: the guard\n"
    write_spec(tmp_path, "openai", "  - assert_no_tool_call: transfer_funds\n", tools)
    recorded = record(tmp_path)
    assert recorded.code == 0, recorded.output
    replayed = flowproof("run", "specs", cwd=tmp_path)
    assert replayed.code == 0, replayed.output

"""`flowproof doctor` answers the Gemini, Azure OpenAI and Ollama clients in their own
dialect and names it, streaming or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import agent_command, flowproof


@pytest.mark.parametrize(
    ("agent", "env", "line"),
    [
        (
            "gemini_agent.py",
            "",
            "1 × POST /v1/models/gemini-2.5-flash:generateContent  →  gemini",
        ),
        (
            "gemini_agent.py",
            "AGENT_STREAM=1 ",
            "1 × POST /v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse  →  gemini",
        ),
        (
            "azure_agent.py",
            "",
            "1 × POST /openai/deployments/booking-gpt-4o/chat/completions?api-version=2024-10-21"
            "  →  azure_openai_chat",
        ),
        (
            "azure_agent.py",
            "AGENT_API=responses ",
            "1 × POST /openai/responses?api-version=2024-10-21  →  azure_openai_responses",
        ),
        ("ollama_agent.py", "", "1 × POST /api/chat  →  ollama_chat"),
        ("ollama_agent.py", "AGENT_STREAM=1 ", "1 × POST /api/chat  →  ollama_chat"),
    ],
    ids=["gemini", "gemini-stream", "azure-chat", "azure-responses", "ollama", "ollama-stream"],
)
def test_doctor_names_the_dialect_and_the_client_takes_its_canned_answer(
    tmp_path: Path, agent: str, env: str, line: str
) -> None:
    result = flowproof("doctor", "--agent", env + agent_command(agent), cwd=tmp_path)
    assert result.code == 0, result.output
    assert "1 model request arrived at flowproof's proxy" in result.stderr
    assert line in result.stderr
    # The agent exits 0 only when its client parsed the canned reply in its own dialect.
    assert "The agent exited with code 0." in result.stderr


def test_doctor_names_the_new_variables_when_nothing_arrives(tmp_path: Path) -> None:
    agent = agent_command("openai_chat_agent.py")
    command = f"AGENT_BUG=hardcoded-base-url {agent}"
    result = flowproof("doctor", "--agent", command, "--timeout", "30", cwd=tmp_path)
    assert result.code == 1, result.output
    assert (
        "ANTHROPIC_BASE_URL, ANTHROPIC_API_BASE, GOOGLE_GEMINI_BASE_URL, AZURE_OPENAI_ENDPOINT, "
        "OLLAMA_HOST = http://127.0.0.1:<port>"
    ) in result.stderr

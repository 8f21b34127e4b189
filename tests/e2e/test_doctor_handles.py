"""`flowproof doctor --agent ... --env NAME=VALUE`: handles resolved as in a spec, and the
per-run values of a request reported with the declaration to add (no third-party agent)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import agent_command, flowproof

AGENT = agent_command("openai_chat_agent.py")
UNREACHABLE = "http://127.0.0.1:9/v1"


def test_a_handle_in_agent_is_resolved(tmp_path: Path) -> None:
    """The injected OPENAI_BASE_URL is overridden to a dead port by --env; only the handle in
    the command line, resolved by doctor, can bring the request to the proxy."""
    result = flowproof(
        "doctor",
        "--env",
        f"OPENAI_BASE_URL={UNREACHABLE}",
        "--env",
        f"OPENAI_API_BASE={UNREACHABLE}",
        "--agent",
        'OPENAI_BASE_URL="${flowproof.proxy_url}" ' + AGENT,
        cwd=tmp_path,
    )
    assert result.code == 0, result.output
    assert "1 × POST /v1/chat/completions  →  openai_chat" in result.stderr


def test_a_handle_in_env_is_resolved(tmp_path: Path) -> None:
    result = flowproof(
        "doctor",
        "--env",
        "OPENAI_BASE_URL=${flowproof.proxy_url}",
        "--agent",
        f"OPENAI_API_BASE={UNREACHABLE} {AGENT}",
        cwd=tmp_path,
    )
    assert result.code == 0, result.output
    assert "1 × POST /v1/chat/completions  →  openai_chat" in result.stderr


def test_env_that_is_not_name_equals_value_is_a_usage_error(tmp_path: Path) -> None:
    result = flowproof("doctor", "--env", "NOT A PAIR", "--agent", AGENT, cwd=tmp_path)
    assert result.code == 2, result.output
    assert (
        "Invalid value for --env: 'NOT A PAIR' is not NAME=VALUE (NAME: letters, digits and "
        "'_', not starting with a digit)"
    ) in result.stderr


def test_the_date_in_a_prompt_is_named_with_the_line_to_add_and_the_cwd_is_not(
    tmp_path: Path,
) -> None:
    """The working directory is normalised by default: only the date needs a line."""
    command = 'FLOWPROOF_PROMPT="Working in $(pwd) on $(date -u +%F)" ' + AGENT
    result = flowproof("doctor", "--agent", command, cwd=tmp_path)
    assert result.code == 0, result.output
    assert "today's date: request 1 at messages[1].content" in result.stderr
    assert "Declare them in the spec (docs/specs.md):\n  normalize: [date]\n" in result.stderr
    assert "the working directory" not in result.stderr

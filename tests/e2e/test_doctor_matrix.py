"""`flowproof doctor` against two real coding-agent CLIs of the matrix (docs/agents.md), each in
a network namespace with only loopback: it names the cwd and date Claude Code puts into its
prompt and the per-run id it sends, and it resolves the `${flowproof.proxy_url}` handle
Codex CLI needs in its own flags, showing the refused WebSocket attempt next to the HTTP call.
Both go on past doctor's first answer (a call to a tool they do not offer) to a second request,
and doctor prints every line each needs.
"""

from __future__ import annotations

import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import flowproof
from tests.e2e.test_agent_matrix import BIN, CLAUDE_QUIET, CODEX_QUIET

pytestmark = pytest.mark.agent_matrix

if os.geteuid() != 0 or shutil.which("unshare") is None:
    pytest.skip("doctor's matrix checks need root and unshare", allow_module_level=True)

LOOPBACK_ONLY = (
    "unshare",
    "-n",
    "sh",
    "-c",
    'ip link set lo up 2>/dev/null || ifconfig lo up; exec "$@"',
    "sh",
)


def doctor(cwd: Path, home: Path, *args: str) -> str:
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    result = flowproof(
        "doctor",
        *args,
        "--timeout",
        "90",
        cwd=cwd,
        env={"HOME": str(home), "TZ": "Etc/UTC", "PATH": path},
        prefix=LOOPBACK_ONLY,
        timeout=150,
    )
    assert result.code == 0, result.output
    return result.output


def test_doctor_names_the_cwd_date_and_session_id_claude_code_sends(tmp_path: Path) -> None:
    if not (BIN / "claude").exists():
        pytest.skip("Claude Code is not installed: run `make install`")
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    quiet = [f"--env={name}={value}" for name, value in CLAUDE_QUIET.items()]
    output = doctor(project, home, f'--agent={BIN / "claude"} -p "$FLOWPROOF_PROMPT"', *quiet)
    today = datetime.now(UTC).date().isoformat()
    # the real path; the second request is Claude Code reporting doctor's probe tool unknown
    assert "2 × POST /v1/messages?beta=true  →  anthropic_messages" in output
    assert "Request 1 was answered with a call to flowproof_doctor_probe" in output
    assert "the working directory" not in output  # normalised by default
    assert "today's date: request 1 at " in output and repr(today) in output
    assert "a per-run id at metadata.user_id: request 1 at metadata.user_id" in output
    assert "  normalize: [date]\n  ignore_fields: [metadata.user_id]" in output


def test_doctor_resolves_a_handle_in_agent_and_shows_the_websocket_attempt(
    tmp_path: Path,
) -> None:
    if not (BIN / "codex").exists():
        pytest.skip("Codex CLI is not installed: run `make install`")
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    command = (
        f"{BIN / 'codex'} exec --skip-git-repo-check -m gpt-4.1 {CODEX_QUIET} "
        '-c openai_base_url="${flowproof.proxy_url}" "$FLOWPROOF_PROMPT" </dev/null'
    )
    output = doctor(
        project, home, "--agent", command, "--env", "CODEX_API_KEY=flowproof-placeholder-key"
    )
    assert (
        "1 × GET /v1/responses  →  WebSocket upgrade, refused with 426 (flowproof serves model "
        "calls over HTTP)"
    ) in output
    assert "2 × POST /v1/responses  →  openai_responses" in output  # past doctor's probe
    assert "the working directory" not in output and "the home directory" not in output
    assert "a per-run id at prompt_cache_key: request 1 at prompt_cache_key" in output
    assert "→ ignore_fields: [client_metadata]" in output
    assert "  normalize: [date]" in output
    assert (
        '  ignore_fields: ["input[*].id", "input[*].internal_chat_message_metadata_passthrough", '
        "prompt_cache_key, client_metadata]"
    ) in output  # every line docs/agents.md gives Codex CLI

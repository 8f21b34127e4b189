"""The published agent matrix (docs/agents.md), recorded and replayed for real.

Each agent is a third-party package installed from its registry at a pinned version (npm:
tests/agents/matrix/package.json and its lockfile; PyPI: pyproject's test extra), run through
the real CLI inside a network namespace that has only loopback: flowproof, the agent and the
scripted upstream all live in it, so the kernel proves no agent reaches the internet. The
upstream answers the first model call with a call to a tool the agent really offers and the
next with a final text.

For each agent, as a new user would: a spec from the agent's own docs with no `normalize:` or
`ignore_fields:` line; `record --verify`, which prints the lines the trace needs to replay
tomorrow (exit 1 when there are any); exactly those lines added and the flow recorded again
(verify then passes); then a replay, green, from a COPY of the project at another path, with
another HOME, another TZ giving another local date, and the upstream stopped; and the same
replay without those lines fails naming the path. The working, home and temporary
directories need no line (they are normalised by default); the agents whose requests carry the
date or per-run ids (Claude Code, Codex CLI) get theirs from verify.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, CliResult, flowproof
from tests.loopback import ThreadedApp
from tests.netns import join_netns, loopback_only_netns  # noqa: F401 (the netns fixture)
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

pytestmark = pytest.mark.agent_matrix

MATRIX = ROOT / "tests" / "agents" / "matrix"
BIN = MATRIX / "node_modules" / ".bin"
OPENCODE = MATRIX / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
"""opencode's Linux x64 binary, from its platform package (npm links no command for it)."""
KEY = "sk-matrix-upstream-key"
TOOL_RESULT_MARKERS = (
    '"role": "tool"',
    '"function_call_output"',
    '"tool_result"',
    '"functionResponse"',
)

if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("nsenter")):
    pytest.skip(
        "the agent matrix runs every agent in a network namespace: needs root, unshare and nsenter",
        allow_module_level=True,
    )


@dataclass(frozen=True)
class MatrixAgent:
    """One row of docs/agents.md: the spec that records and replays it."""

    id: str
    command: str
    tool: str
    arguments: dict[str, Any]
    steps: str
    env: dict[str, str] = field(default_factory=dict)
    declare: tuple[str, ...] = ()
    """The spec lines `record --verify` prints for it (docs/agents.md gives the same)."""
    volatile: str = ""
    """A path the replay names when its `ignore_fields:` line is left out."""
    needs: Path | None = None
    """A file that must exist (an npm package's binary)."""
    files: dict[str, str] = field(default_factory=dict)
    """Project files its own docs have a user commit beside the spec (its settings)."""
    git: bool = False
    """The project is a git repository (`.flowproof/` in its .gitignore, as docs/ci.md says)."""


CLAUDE_QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    # No per-project memory: it is state carried between runs, and its path in the prompt
    # (~/.claude/projects/<cwd as a slug>/memory/) names the cwd in a spelling of its own.
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
}
CODEX_QUIET = (
    "-c analytics.enabled=false -c features.plugins=false -c check_for_update_on_startup=false"
)
GEMINI_SETTINGS = json.dumps(
    {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
    }
)
PY = "python"  # the test's interpreter is put first on PATH (it has the SDKs)

AGENTS = [
    MatrixAgent(
        "claude-code",
        f'{BIN / "claude"} -p "$FLOWPROOF_PROMPT" --model claude-sonnet-4-5 --allowedTools Glob',
        "Glob",
        {"pattern": "**/*.md"},
        "  - assert_tool_call: Glob where pattern contains md\n"
        "  - assert: reply contains markdown\n",
        env=CLAUDE_QUIET,
        declare=("normalize: [date]", "ignore_fields: [metadata.user_id]"),
        volatile="metadata.user_id",
        needs=BIN / "claude",
    ),
    MatrixAgent(
        "codex-cli",
        f"{BIN / 'codex'} exec --skip-git-repo-check -m gpt-4.1 {CODEX_QUIET} "
        '-c openai_base_url="${flowproof.proxy_url}" "$FLOWPROOF_PROMPT" </dev/null',
        "get_goal",
        {},
        "  - assert_tool_call: get_goal\n  - assert: reply contains goal\n",
        env={"CODEX_API_KEY": "flowproof-placeholder-key"},
        # Codex 0.169 also stamps every input item with a turn id and a creation time
        # (internal_chat_message_metadata_passthrough): per-run, but inside `input`.
        declare=(
            "normalize: [date]",
            'ignore_fields: ["input[*].id", "input[*].internal_chat_message_metadata_passthrough", '
            "prompt_cache_key, client_metadata]",
        ),
        volatile="input[0].id",
        needs=BIN / "codex",
    ),
    MatrixAgent(
        "gemini-cli",
        f'{BIN / "gemini"} -p "$FLOWPROOF_PROMPT" -m gemini-2.5-flash',
        "glob",
        {"pattern": "**/*.md"},
        "  - assert_tool_call: glob where pattern contains md\n"
        "  - assert: reply contains markdown\n",
        env={"GEMINI_API_KEY": "flowproof-placeholder-key", "GEMINI_CLI_TRUST_WORKSPACE": "true"},
        files={".gemini/settings.json": GEMINI_SETTINGS},
        # It lists the project's files in its first prompt, leaving out what git ignores:
        # flowproof's own run records (.flowproof/) among them.
        git=True,
        # Gemini CLI mints an id for each call the model made without one, per run.
        declare=(
            "normalize: [date]",
            'ignore_fields: ["contents[*].parts[*].functionCall.id", '
            '"contents[*].parts[*].functionResponse.id"]',
        ),
        volatile="contents[1].parts[0].functionCall.id",
        needs=BIN / "gemini",
    ),
    MatrixAgent(
        "opencode",
        f'{OPENCODE} run -m openai/gpt-4.1 "$FLOWPROOF_PROMPT"',
        "glob",
        {"pattern": "**/*.md"},
        "  - assert_tool_call: glob where pattern contains md\n"
        "  - assert: reply contains markdown\n",
        env={
            "OPENCODE_CONFIG_CONTENT": '{"provider": {"openai": {"options": {"baseURL": "${flowproof.proxy_url}"}}}}',
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
        },
        declare=("normalize: [date]", "ignore_fields: [prompt_cache_key]"),
        volatile="prompt_cache_key",
        needs=OPENCODE,
    ),
    MatrixAgent(
        "openai-agents",
        f"{PY} {MATRIX / 'openai_agents_agent.py'}",
        "get_weather",
        {"city": "Nairobi"},
        "  - assert_tool_call: get_weather where city equals Nairobi\n"
        "  - assert: reply contains sunny\n",
    ),
    MatrixAgent(
        "pydantic-ai",
        f"{PY} {MATRIX / 'pydantic_ai_agent.py'}",
        "get_weather",
        {"city": "Nairobi"},
        "  - assert_tool_call: get_weather where city equals Nairobi\n"
        "  - assert: reply contains sunny\n",
    ),
    MatrixAgent(
        "langchain",
        f"{PY} {MATRIX / 'langchain_agent.py'}",
        "get_weather",
        {"city": "Nairobi"},
        "  - assert_tool_call: get_weather where city equals Nairobi\n"
        "  - assert: reply contains sunny\n",
        env={"LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"},
    ),
    MatrixAgent(
        "ai-sdk",
        f"node {MATRIX / 'ai_sdk_agent.mjs'}",
        "get_weather",
        {"city": "Nairobi"},
        "  - assert_tool_call: get_weather where city equals Nairobi\n"
        "  - assert: reply contains sunny\n",
        needs=MATRIX / "node_modules" / "ai" / "package.json",
    ),
    MatrixAgent(
        "openai-agents-js",
        f"node {MATRIX / 'openai_agents_js_agent.mjs'}",
        "get_weather",
        {"city": "Nairobi"},
        "  - assert_tool_call: get_weather where city equals Nairobi\n"
        "  - assert: reply contains sunny\n",
        needs=MATRIX / "node_modules" / "@openai" / "agents" / "package.json",
    ),
]
FINAL = {
    "Glob": "Found no markdown files in this directory.",
    "glob": "Found no markdown files in this directory.",
    "get_goal": "There is no goal set for this thread.",
    "get_weather": "It is sunny in Nairobi, 24 degrees.",
}


class NamespacedUpstream(ScriptedUpstream):
    """The scripted upstream, listening on the namespace's loopback: its server thread joins
    the namespace before it binds (a network namespace is per thread)."""

    def start_in(self, pid: int) -> None:
        def routes(app: Any) -> None:
            join_netns(pid)
            app.router.add_post("/{tail:.*}", self._handle)

        self._server = ThreadedApp("scripted-upstream-netns", routes)
        self.port = self._server.start()


def tool_then_text(name: str, arguments: dict[str, Any]) -> Callable[[dict], dict]:
    """A model that asks for `name` until a tool result comes back, then answers in text."""

    def decide(body: dict) -> dict:
        wire = json.dumps(body)
        if any(marker in wire for marker in TOOL_RESULT_MARKERS):
            return text(FINAL[name])
        return calls(tool_call(name, arguments, call_id=f"call_{name}_1"))

    return decide


def write_spec(project: Path, agent: MatrixAgent, lines: tuple[str, ...] = ()) -> Path:
    """The spec a new user writes from the agent's own docs, plus `lines` (what verify printed)."""
    env = "".join(f"\n    {name}: '{value}'" for name, value in agent.env.items()) or " {}"
    spec = (
        textwrap.dedent(f"""\
        name: {agent.id} calls {agent.tool} and answers
        app: agent
        agent:
          command: '{agent.command}'
          timeout: 120
          env:""")
        + env
        + textwrap.dedent(f"""
        tools:
          - name: {agent.tool}
        steps:
          - prompt: Use the {agent.tool} tool once, then answer in one sentence.
        """)
        + agent.steps
        + "".join(f"{line}\n" for line in lines)
    )
    files = {**agent.files, ".gitignore": ".flowproof/\n"} if agent.git else agent.files
    if agent.git and not (project / ".git").exists():
        project.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    for name, content in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(content)
    path = project / "specs" / f"{agent.id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec)
    return path


def printed_lines(output: str) -> tuple[str, ...]:
    """The `normalize:`/`ignore_fields:` lines of the "Declare them in the spec" block."""
    _, found, block = output.partition("Declare them in the spec (docs/specs.md):\n")
    if not found:
        return ()
    lines = []
    for line in block.splitlines():
        if not line.startswith("  "):
            break
        lines.append(line.strip())
    return tuple(line for line in lines if line.startswith(("normalize:", "ignore_fields:")))


def yaml_item(value: str) -> str:
    return (
        value
        if value.isidentifier() or value.replace(".", "_").isidentifier()
        else json.dumps(value)
    )


def in_netns(pid: int, *args: str, cwd: Path, env: dict[str, str]) -> CliResult:
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    return flowproof(
        *args,
        cwd=cwd,
        env={"PATH": path, **env},
        prefix=("nsenter", f"--net=/proc/{pid}/ns/net", "--"),
        # record --verify replays the flow once or more: a CLI that takes seconds to start
        # (Gemini CLI, opencode) needs minutes for it on a busy 2-core machine.
        timeout=900,
    )


def flow_duration(project: Path) -> float:
    """Seconds the latest run's one flow took, from its run record."""
    latest = max((project / ".flowproof" / "runs").glob("*/report.json"))
    return float(json.loads(latest.read_text())["flows"][0]["duration"])


def other_timezone() -> str:
    """A TZ whose local date is not today's UTC date (UTC-12 before noon UTC, else UTC+14)."""
    return "Etc/GMT+12" if datetime.now(UTC).hour < 12 else "Etc/GMT-14"


@pytest.mark.parametrize("agent", AGENTS, ids=[agent.id for agent in AGENTS])
def test_records_then_replays_elsewhere(agent: MatrixAgent, netns: int, tmp_path: Path) -> None:
    if agent.needs is not None and not agent.needs.exists():
        pytest.skip(f"{agent.id} is not installed: run `make install` (npm ci in {MATRIX})")
    upstream = NamespacedUpstream(script=[tool_then_text(agent.tool, agent.arguments)] * 24)
    upstream.start_in(netns)
    project, home = tmp_path / "recorded" / "project", tmp_path / "home-recorded"
    home.mkdir(parents=True)
    # Each run its own temporary directory, as a per-user TMPDIR is (macOS): with TMPDIR unset
    # it is /tmp, and a checkout under /tmp (a CI clone) would then be normalised with it.
    (tmp_path / "tmp-recorded").mkdir()
    (tmp_path / "tmp-replay").mkdir()
    record_env = {
        "HOME": str(home),
        "TMPDIR": str(tmp_path / "tmp-recorded"),
        "TZ": "Etc/UTC",
        "FLOWPROOF_AGENT_UPSTREAM": upstream.base_url,
        "FLOWPROOF_AGENT_KEY": KEY,
    }
    # As a new user writes it: no normalize:/ignore_fields: line; verify says what to add.
    write_spec(project, agent)
    verified = in_netns(netns, "record", "--verify", "specs", cwd=project, env=record_env)
    printed = printed_lines(verified.output)
    assert printed == agent.declare, verified.output
    assert verified.code == (1 if printed else 0), verified.output
    recorded = verified
    if printed:  # exactly the printed lines, recorded again: verify now passes
        write_spec(project, agent, printed)
        recorded = in_netns(netns, "record", "--verify", "specs", cwd=project, env=record_env)
    upstream.stop()
    assert recorded.code == 0, recorded.output
    trace = (project / "specs" / f"{agent.id}.trace.json").read_text()
    assert KEY not in trace
    assert any(agent.tool in json.dumps(r.body) for r in upstream.received)
    if agent.id == "codex-cli":
        # Its WebSocket attempt is refused with 426 at once; seven retries would add about
        # 10 s. Read from the run record's flow duration (the agent and the proxy at work),
        # not the wall time, which also counts flowproof's start-up on a busy machine.
        seconds = flow_duration(project)
        assert seconds < 7, f"the record took {seconds:.1f} s: Codex retried its WebSocket"

    # Another path, as a clone on a CI runner: the folder keeps its name (the repository's).
    elsewhere, other_home = tmp_path / "moved" / "project", tmp_path / "home-replay"
    shutil.copytree(project, elsewhere)
    other_home.mkdir()
    replay_env = {
        "HOME": str(other_home),
        "TMPDIR": str(tmp_path / "tmp-replay"),
        "TZ": other_timezone(),
    }
    replay = in_netns(netns, "run", "specs", cwd=elsewhere, env=replay_env)
    assert replay.code == 0, replay.output

    if printed:
        write_spec(elsewhere, agent)
        undeclared = in_netns(netns, "run", "specs", cwd=elsewhere, env=replay_env)
        assert undeclared.code == 1, undeclared.output
        assert "matches no recorded turn" in undeclared.output, undeclared.output
    if agent.volatile:
        # normalize: kept, ignore_fields: dropped: the divergence names the per-run field.
        kept = tuple(line for line in printed if not line.startswith("ignore_fields:"))
        write_spec(elsewhere, agent, kept)
        unignored = in_netns(netns, "run", "specs", cwd=elsewhere, env=replay_env)
        assert unignored.code == 1, unignored.output
        assert f"{agent.volatile}:" in unignored.output, unignored.output

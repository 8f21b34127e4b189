"""Start-up stays lean, and the lint rule that keeps replay free of network clients works."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_version_imports_no_heavy_module() -> None:
    probe = (
        "import sys, runpy; sys.argv=['flowproof','--version']\n"
        "try:\n    runpy.run_module('flowproof', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy=[m for m in ('aiohttp','pydantic','jinja2','yaml','truststore') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.splitlines() == ["flowproof 0.1.0", "HEAVY []"], done.stderr


def test_the_run_path_imports_no_http_library() -> None:
    """Replay has no network client, and pays for none: the proxy serves HTTP itself, and
    aiohttp loads only when a record forwards, a `url:` flow triggers or an MCP server is
    reached over HTTP."""
    probe = (
        "import sys, flowproof.cli.flows, flowproof.engine.run\n"
        "print([m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'yarl', 'multidict', "
        "'truststore') or m.startswith('flowproof.outbound')])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.parametrize(
    "snippet", ["from aiohttp import ClientSession\n", "import aiohttp\naiohttp.ClientSession()\n"]
)
def test_lint_forbids_a_network_client_on_the_replay_path(snippet: str) -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    done = subprocess.run(
        [ruff, "check", "--stdin-filename", "flowproof/proxy/replay.py", "-"],
        input=snippet,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 1
    assert "TID251" in done.stdout and "replay has no network client" in done.stdout


def test_lint_allows_the_client_in_the_forward_backend() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    done = subprocess.run(
        [ruff, "check", "--stdin-filename", "flowproof/proxy/forward.py", "-"],
        input="from aiohttp import ClientSession\n\nprint(ClientSession)\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout


def test_the_run_path_imports_no_template_engine() -> None:
    """A run prints its summary and reads the lane kinds' views on every flow, but renders a
    report only when asked: jinja2 loads with the first report, not at start-up."""
    probe = (
        "import sys, flowproof.cli.flows, flowproof.engine.run, flowproof.trace.kinds as kinds\n"
        "kinds.kind_named('mcp')\n"
        "print([m for m in sys.modules if m.split('.')[0] == 'jinja2'])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_run_path_imports_only_what_a_replay_uses() -> None:
    """psutil loads only when an agent left something to look for (flowproof/host/processes.py);
    `record --verify` and `--diff` load their machinery when asked; the run record's field
    descriptions are read from the source only when its schema is rendered."""
    probe = (
        "import sys, flowproof.cli.flows, flowproof.engine.run\n"
        "from flowproof.runrecord.model import FlowRecord\n"
        "late = ('psutil', 'flowproof.engine.verify', 'flowproof.engine.replayability',\n"
        "        'flowproof.engine.rerecord')\n"
        "print([m for m in late if m in sys.modules],"
        " FlowRecord.model_fields['verdict'].description)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "[] None", done.stdout + done.stderr


_AGENT = """\
import json, os, urllib.request
body = {"model": "m", "messages": [{"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"Content-Type": "application/json",
             "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "none")},
)
with urllib.request.urlopen(request, timeout=30) as response:
    print(json.loads(response.read())["choices"][0]["message"]["content"])
"""
_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "all booked"},
            "finish_reason": "stop",
        }
    ],
}
OFF_THE_REPLAY_PATH = (
    # The MCP stand-ins: only a flow that declares servers under `mcp:`.
    "flowproof.mcp.server",
    "flowproof.mcp.stdio",
    "flowproof.mcp.standin",
    "flowproof.mcp.messages",
    "flowproof.mcp.http",
    # Containment: only a flow that declares allow_egress or asserts no egress.
    "flowproof.containment.engage",
    "flowproof.containment.policy",
    "flowproof.containment.findings",
    "flowproof.containment.probe",
    # Record's own: the forwarding backend and the lint of the trace it is about to write.
    "flowproof.proxy.forward",
    "flowproof.proxy.keep",
    "flowproof.trace.lint",
    # The reports' views: only a report, or a flow with a lane other than the model's.
    "flowproof.report.view",
    "flowproof.report.render",
)


def test_a_replay_of_a_simple_flow_loads_only_what_it_uses(tmp_path: Path) -> None:
    """A replayed flow with no `mcp:` block, no containment and no report asked for loads
    none of the MCP stand-ins, containment, record's forwarding and lint, or the reports'
    views: each module here was moved off that path, and importing one back fails this."""
    agent = tmp_path / "agent.py"
    agent.write_text(_AGENT)
    command = json.dumps(f"{sys.executable} -S {agent}")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "flow.yaml").write_text(
        "name: One turn\n"
        "app: agent\n"
        "agent:\n"
        f"  command: {command}\n"
        "steps:\n"
        "  - prompt: Book it.\n"
        "  - assert: reply contains booked\n"
    )
    request = {"model": "m", "messages": [{"role": "user", "content": "Book it."}]}
    turn = {"dialect": "openai_chat", "request": request, "response": _ANSWER}
    lanes = {"model": [turn]}
    trace = {
        "format_version": 5,
        "flowproof_version": "0.1.0",
        "normalized_by_default": [],
        "lanes": lanes,
    }
    (specs / "flow.trace.json").write_text(json.dumps(trace))
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['flowproof', 'run', 'specs']\n"
        "try:\n    runpy.run_module('flowproof', run_name='__main__')\n"
        "except SystemExit as exit:\n    code = exit.code\n"
        f"loaded = [m for m in {OFF_THE_REPLAY_PATH!r} if m in sys.modules]\n"
        "loaded += [m for m in sys.modules if m.startswith('flowproof.outbound')]\n"
        "print('EXIT', code, 'LOADED', loaded)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert "PASS  One turn" in done.stderr, done.stdout + done.stderr  # the flow replayed
    assert "EXIT 0 LOADED []" in done.stdout.splitlines(), done.stdout + done.stderr

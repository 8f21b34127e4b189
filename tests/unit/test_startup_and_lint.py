"""Start-up stays lean, and the lint rule that keeps replay free of network clients works."""

from __future__ import annotations

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
    """psutil loads only when an agent left something to look for (flowproof/processes.py);
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

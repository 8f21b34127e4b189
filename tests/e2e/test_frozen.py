"""Selftest of the frozen engine (dist/flowproof/flowproof, built by `make freeze`): it starts,
its registries and templates are bundled, and one real flow records and replays through it.

The whole end-to-end suite can also run through it unchanged:
`FLOWPROOF_TEST_ENGINE=dist/flowproof/flowproof pytest tests/e2e`.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from flowproof._version import __version__
from tests.conftest import ENGINE_VARIABLE, ROOT, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

BUNDLE = ROOT / "dist" / "flowproof"
EXECUTABLE = BUNDLE / ("flowproof.exe" if sys.platform == "win32" else "flowproof")

pytestmark = pytest.mark.skipif(
    not EXECUTABLE.is_file(),
    reason=f"{EXECUTABLE.relative_to(ROOT)} is not built; `make freeze` builds it",
)


@pytest.fixture(autouse=True)
def frozen_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every flowproof() call in this module starts the frozen bundle."""
    monkeypatch.setenv(ENGINE_VARIABLE, str(EXECUTABLE))


def test_version(tmp_path: Path) -> None:
    result = flowproof("--version", cwd=tmp_path)
    assert (result.code, result.stdout) == (0, f"flowproof {__version__}\n"), result.output


def test_the_matcher_registry_is_bundled_whole(tmp_path: Path) -> None:
    """Same engine in every channel: the frozen help text is the source checkout's."""
    from flowproof.assertions.docgen import render_matchers_help

    result = flowproof("help-matchers", cwd=tmp_path)
    assert result.code == 0, result.output
    assert result.stdout == render_matchers_help() + "\n"


def test_flowproof_mcp_is_left_out_and_says_how_to_get_it(tmp_path: Path) -> None:
    """The MCP server needs the MCP SDK, which the bundle does not carry."""
    result = flowproof("mcp", cwd=tmp_path)
    assert result.code == 2, result.output
    assert "does not include the MCP server" in result.stderr
    assert "pip install 'flowproof-cli[mcp]'" in result.stderr


def test_record_then_replay_with_every_report(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    recorded = record(tmp_path, upstream)
    assert recorded.code == 0, recorded.output
    upstream.stop()
    reports = [f"--{kind}={tmp_path / f'report.{kind}'}" for kind in ("html", "markdown", "junit")]
    result = flowproof("run", "specs", *reports, cwd=tmp_path)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<html" in html and "Booking assistant books a flight" in html
    assert "Booking assistant books a flight" in (tmp_path / "report.markdown").read_text()
    assert "<testsuite" in (tmp_path / "report.junit").read_text()


def test_the_agent_gets_the_users_environment_not_the_bootloaders(tmp_path: Path) -> None:
    """The bootloader points LD_LIBRARY_PATH at _internal/; an agent inheriting it would load
    the bundle's libstdc++ and libssl (flowproof/host/environ.py)."""
    dump = tmp_path / "agent.env"
    flowproof(
        "doctor",
        "--agent",
        f"sh -c 'env > {dump}'",
        "--timeout",
        "30",
        cwd=tmp_path,
        env={"LD_LIBRARY_PATH": "/users/own/lib"},
    )
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert seen.get("LD_LIBRARY_PATH") == "/users/own/lib"
    assert not [name for name in seen if name.startswith("_PYI_") or name.endswith("_ORIG")]


def test_the_mcp_stand_in_is_this_frozen_engine_re_invoked(tmp_path: Path) -> None:
    """The stdio stand-in an MCP SDK spawns is the bundle itself (engine_argv), with the
    almost empty environment the SDK gives it."""
    from tests import mcp_servers as fx
    from tests.e2e.test_mcp import GONE, TASK, python_agent, stdio
    from tests.e2e.test_mcp import record as record_mcp
    from tests.e2e.test_mcp import write_spec as write_mcp_spec

    write_mcp_spec(tmp_path, python_agent("classic"), stdio(fx.tools_server_argv()), TASK[:2])
    recorded = record_mcp(tmp_path)
    assert recorded.code == 0, recorded.output
    trace = (tmp_path / "specs" / "mcp.trace.json").read_text()
    assert str(EXECUTABLE) not in trace
    write_mcp_spec(tmp_path, python_agent("classic"), stdio([GONE]), TASK[:2])
    replayed = flowproof("run", "specs", cwd=tmp_path)
    assert replayed.code == 0, replayed.output


@pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64",
    reason="the compiled filesystem loop is built on x86_64 Linux only",
)
def test_the_compiled_filesystem_loop_is_bundled() -> None:
    """A release frozen without it would observe files in Python, ~1.5x slower (setup.py builds
    it where gcc and the Python headers are; release.yml installs gcc in the old-glibc image)."""
    assert list(BUNDLE.rglob("flowproof/containment/_fsloop.*.so")), sorted(
        path.name for path in BUNDLE.rglob("*.so")
    )

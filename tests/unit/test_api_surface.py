"""The Python API's surface and the MCP server's edges that need no flow: `import flowproof`
stays lean, other commands never load the MCP SDK, record's set-up check names variables and
never their values, and every tool answer is redacted."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def loaded_after(statement: str) -> list[str]:
    probe = (
        f"import sys\n{statement}\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', "
        "'flowproof.doors.api', 'flowproof.mcp_server', 'flowproof.engine'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return list(eval(done.stdout))  # a list of module names, printed by the probe


def test_import_flowproof_loads_no_api_and_flow_loads_it_on_first_use() -> None:
    assert loaded_after("import flowproof") == []
    assert "flowproof.doors.api" in loaded_after("from flowproof import Flow")


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import flowproof

    with pytest.raises(AttributeError, match="no attribute 'Flaw'"):
        _ = flowproof.Flaw  # type: ignore[attr-defined]


def test_the_cli_loads_neither_the_mcp_sdk_nor_the_server() -> None:
    assert loaded_after("import flowproof.cli, flowproof.cli.mcp") == []


def test_record_set_up_names_what_is_missing_and_never_a_value() -> None:
    from flowproof.mcp_server.tools import record_not_set_up

    key = "sk-unit-0123456789abcdef"
    missing_upstream = record_not_set_up({"OPENAI_API_KEY": key})
    assert missing_upstream is not None and key not in missing_upstream
    assert "no upstream: set FLOWPROOF_AGENT_UPSTREAM" in missing_upstream
    assert "no key" not in missing_upstream
    missing_key = record_not_set_up({"FLOWPROOF_AGENT_UPSTREAM": "http://127.0.0.1:9/v1"})
    assert missing_key is not None and "no key: set one of FLOWPROOF_AGENT_KEY" in missing_key
    assert "no upstream" not in missing_key
    ready = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "FLOWPROOF_AGENT_KEY": key}
    assert record_not_set_up(ready) is None


def test_a_tool_answer_is_redacted_and_a_crash_is_data(monkeypatch: pytest.MonkeyPatch) -> None:
    from flowproof.guards.redaction import REDACT
    from flowproof.mcp_server import tools

    key = "sk-unit-redacted-0123456789"
    monkeypatch.setitem(REDACT._names, key, "FLOWPROOF_AGENT_KEY")  # as hide() would, undone

    @tools.as_data
    async def echoes() -> tools.Result:
        return {"reply": f"the key is {key}"}

    @tools.as_data
    async def crashes() -> tools.Result:
        raise RuntimeError(f"boom {key}")

    echoed = asyncio.run(echoes())
    assert key not in str(echoed) and "[redacted FLOWPROOF_AGENT_KEY]" in echoed["reply"]
    crashed = asyncio.run(crashes())
    assert (
        crashed["error"]["kind"] == "internal"
        and "RuntimeError: boom" in crashed["error"]["message"]
    )
    assert key not in str(crashed)

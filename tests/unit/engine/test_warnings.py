"""The honest warnings: a tool mocked or forbidden at the model boundary alone is named; one an
MCP stand-in answers is not, because the stand-in is what stops it running."""

from __future__ import annotations

import textwrap
from pathlib import Path

from flowproof.engine.warnings import uncovered_tools
from flowproof.spec.load import load_spec


def warnings_for(tmp_path: Path, mcp: str) -> list[str]:
    path = tmp_path / "guard.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: guard
        app: agent
        agent:
          command: ./agent
        tools:
          - name: delete_file
            result: { ok: true }
        """)
        + mcp
        + textwrap.dedent("""\
        steps:
          - prompt: delete it
          - assert_no_tool_call: delete_file
          - assert_no_tool_call: files/delete_file
        """)
    )
    return uncovered_tools(load_spec(path))


def test_without_a_stand_in_both_the_mock_and_the_guard_are_named(tmp_path: Path) -> None:
    mcp = "mcp:\n  - name: files\n    command: ./server\n"
    found = warnings_for(tmp_path, mcp)
    assert len(found) == 2
    assert found[0].startswith("tool delete_file is mocked at the model boundary only")
    assert found[1].startswith("assert_no_tool_call delete_file: nothing intercepts delete_file")


def test_a_tool_the_stand_in_answers_is_not_named(tmp_path: Path) -> None:
    mcp = textwrap.dedent("""\
        mcp:
          - name: files
            command: ./server
            tools:
              - name: delete_file
                result: { ok: true }
        """)
    assert warnings_for(tmp_path, mcp) == []

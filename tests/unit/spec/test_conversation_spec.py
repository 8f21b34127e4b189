"""The `conversation:` step: its turns, their steps, and every way of writing it wrong, each
refused at its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowproof.core.errors import SpecError
from flowproof.spec.load import load_spec

HEAD = """\
name: two turns
app: agent
agent:
  command: python agent.py
tools:
  - name: search_flights
steps:
"""
GOOD = (
    HEAD
    + """\
  - conversation:
      - user: Find flights to Paris
        steps:
          - assert_tool_call: search_flights
      - user: Make it Tuesday
        steps:
          - assert: reply contains Tuesday
  - assert_no_tool_call: delete_booking
"""
)


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    return load_spec(path)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as caught:
        load(tmp_path, text)
    return str(caught.value).replace(str(tmp_path) + "/", "")


def test_a_conversation_loads_its_turns_and_scopes_their_steps(tmp_path: Path) -> None:
    loaded = load(tmp_path, GOOD)
    assert [(t.number, t.text, t.line) for t in loaded.conversation] == [
        (1, "Find flights to Paris", 9),
        (2, "Make it Tuesday", 12),
    ]
    # The first user turn is the agent's prompt; steps are numbered as written.
    assert loaded.prompts == ("Find flights to Paris",)
    assert [(s.ref.number, s.turn, s.ref.line) for s in loaded.assertions] == [
        (2, 1, 11),
        (3, 2, 14),
        (4, None, 15),
    ]
    assert str(loaded.assertions[1].ref) == "step 3 (turn 2, flow.yaml:14)"


def test_a_single_turn_flow_has_no_conversation(tmp_path: Path) -> None:
    loaded = load(tmp_path, HEAD + "  - prompt: Find flights\n  - assert: reply contains x\n")
    assert loaded.conversation == () and loaded.assertions[0].turn is None
    assert str(loaded.assertions[0].ref) == "step 2 (flow.yaml:9)"


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (
            "  - conversation: hello\n",
            "flow.yaml:8: a conversation is a list of turns, each `- user: <what the user says>` "
            "with the `steps:` that judge what the agent did in that turn",
        ),
        ("  - conversation: []\n", "flow.yaml:8: a conversation is a list of turns"),
        (
            "  - conversation:\n      - Find flights\n",
            "flow.yaml:9: conversation turn 1 must be a mapping with `user:` and `steps:`",
        ),
        (
            "  - conversation:\n      - usr: Find flights\n",
            "flow.yaml:9: unknown key 'usr' in conversation turn 1; did you mean 'user'?",
        ),
        (
            "  - conversation:\n      - user: Find\n      - steps: []\n",
            "flow.yaml:10: conversation turn 2 needs `user:` with the text the user says",
        ),
        (
            "  - conversation:\n      - user: Find\n        steps: assert_tool_call x\n",
            "flow.yaml:10: conversation turn 1: `steps:` is a list of assertion steps",
        ),
        (
            "  - conversation:\n      - user: Find\n        steps:\n          - prompt: more\n",
            "flow.yaml:11: a conversation turn's steps judge it; what the user says is the "
            "turn's `user:`; start another turn (`- user: ...`) for the next thing the user says",
        ),
        (
            "  - conversation:\n      - user: Find\n        steps:\n"
            "          - assert_tool_cal: search_flights\n",
            "flow.yaml:11: unknown step 'assert_tool_cal'; did you mean 'assert_tool_call'?",
        ),
        (
            "  - conversation:\n      - user: Find\n        steps:\n"
            "          - assert_tool_call: search_flights where\n",
            "flow.yaml:11: step 2 (assert_tool_call):",
        ),
        (
            "  - prompt: Find\n  - conversation:\n      - user: Find\n",
            "flow.yaml:8: a flow with a conversation step has no prompt step",
        ),
        (
            "  - conversation:\n      - user: A\n  - conversation:\n      - user: B\n",
            "flow.yaml:10: a flow has one conversation step; put every turn in the first",
        ),
    ],
)
def test_a_malformed_conversation_names_its_line(tmp_path: Path, steps: str, message: str) -> None:
    assert error(tmp_path, HEAD + steps).startswith(message)


def test_a_url_agent_may_hold_a_conversation(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  command: python agent.py", "  url: http://127.0.0.1:9/run\n  proxy_port: 8765"
    )
    assert len(load(tmp_path, text).conversation) == 2


def test_an_mcp_step_inside_a_turn_is_refused(tmp_path: Path) -> None:
    text = GOOD.replace("tools:", "mcp:\n  - name: files\n    command: server\ntools:").replace(
        "assert_tool_call: search_flights", "assert_tool_call: files/read"
    )
    assert "judges 'files/read' at its MCP server inside conversation turn 1" in error(
        tmp_path, text
    )

"""The remedy a divergence names: classified from the two values, the moved directories and
the recorded body (matching/remedy.py)."""

from __future__ import annotations

from flowproof.matching.remedy import Remedy, classify, tool_result_name

PROMPT = "You are a coding agent.\nToday's date: {}\nWorking directory: {}\n"


def test_a_changed_date_is_declared_as_normalize_date() -> None:
    found = classify(
        "messages[0].content",
        PROMPT.format("2026-12-02", "/w"),
        PROMPT.format("2026-12-01", "/w"),
    )
    assert found == Remedy("date", normalize="date", seen="2026-12-01")
    assert found.line == "normalize: [date]"


def test_a_changed_weekday_is_a_date_too() -> None:
    found = classify("system", "Today is Wednesday.", "Today is Tuesday.")
    assert found is not None and found.normalize == "date"


def test_a_per_run_uuid_outside_the_conversation_is_an_ignored_field() -> None:
    found = classify(
        "metadata.user_id",
        "user_ab_session_0b6c5c1e-8f2a-4c47-9e1e-2b8d6f1f0a11",
        "user_ab_session_9d0e8a51-1b2c-4d3e-8f4a-5b6c7d8e9f00",
    )
    assert found is not None and found.line == "ignore_fields: [metadata.user_id]"


def test_a_per_item_id_is_declared_for_every_item_and_quoted() -> None:
    found = classify("input[3].id", "msg_0123456789abcdef01", "msg_fedcba9876543210ff")
    assert found is not None and found.line == 'ignore_fields: ["input[*].id"]'


def test_an_id_inside_the_conversation_cannot_be_ignored() -> None:
    found = classify(
        "messages[0].content",
        "session 0b6c5c1e-8f2a-4c47-9e1e-2b8d6f1f0a11",
        "session 9d0e8a51-1b2c-4d3e-8f4a-5b6c7d8e9f00",
    )
    assert found is not None and found.line is None
    assert found.why_not is not None and "inside the conversation (messages)" in found.why_not
    # What a user can act on with a third-party agent is named, not only "stop sending it".
    assert "If the agent is your own code, stop sending it" in found.why_not
    assert "give that tool a `result:`" in found.why_not


def test_a_changed_prompt_has_no_remedy() -> None:
    assert classify("messages[1].content", "Book me a flight", "Book me a train") is None


def test_an_edit_beside_an_unchanged_date_or_id_is_neither() -> None:
    recorded, replayed = "2026-12-02 KQ311", "2026-12-02 KQ999"
    assert classify("messages[1].content", recorded, replayed) is None
    session = "0b6c5c1e-8f2a-4c47-9e1e-2b8d6f1f0a11"
    recorded, replayed = f"{session}/KQ311", f"{session}/KQ999"
    assert classify("metadata.note", recorded, replayed) is None


def test_a_moved_directory_is_named_only_with_both_spellings() -> None:
    moved = {"cwd": ("/tmp/a/project", "/tmp/elsewhere/project")}
    recorded, replayed = (
        PROMPT.format("x", "/tmp/a/project"),
        PROMPT.format("x", "/tmp/elsewhere/project"),
    )
    found = classify("messages[0].content", recorded, replayed, moved)
    assert found == Remedy("cwd", normalize="cwd", seen="/tmp/elsewhere/project")
    assert classify("messages[0].content", recorded, replayed) is None


def test_a_moved_directory_is_recognised_in_a_clipped_window() -> None:
    before, after = "/tmp/pytest-of-root/pytest-9/test_x0/project", "/tmp/verify-1/checkout/project"
    body = {"messages": [{"role": "system", "content": PROMPT.format("x", before)}]}
    window = '…"Working directory: /tmp/verify-1/check"…'
    found = classify("messages[0].content", "…", window, {"cwd": (before, after)}, body)
    assert found is not None and found.normalize == "cwd"


CHAT = {
    "messages": [
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "exec_command"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Chunk ID: 1"},
    ]
}
RESPONSES = {
    "input": [
        {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Wall time: 1"},
    ]
}
ANTHROPIC = {
    "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1"}]},
    ]
}


def test_a_tool_output_is_found_in_each_wire_shape() -> None:
    assert tool_result_name(CHAT, "messages[2].content") == "exec_command"
    assert tool_result_name(RESPONSES, "input[1].output") == "exec_command"
    assert tool_result_name(ANTHROPIC, "messages[1].content[0].content") == "bash"
    assert tool_result_name(CHAT, "messages[0].content") is None


def test_a_differing_tool_output_names_its_result_remedy() -> None:
    found = classify("messages[2].content", "Chunk ID: 1", "Chunk ID: 2", recorded_body=CHAT)
    assert found == Remedy("tool result", tool="exec_command")
    assert found.line == "tools: - name: exec_command  result: <the output the agent should see>"


def test_a_date_in_a_tool_output_is_a_date() -> None:
    found = classify(
        "messages[2].content", "Today: 2026-12-02", "Today: 2026-12-01", recorded_body=CHAT
    )
    assert found is not None and found.normalize == "date"


def test_an_id_below_an_items_own_identity_field_declares_that_field_whole() -> None:
    """Codex CLI's per-item bookkeeping: its turn id lies below a field ignore_fields admits."""
    path = "input[1].internal_chat_message_metadata_passthrough.turn_id"
    remedy = classify(
        path, "01a2354f-3a40-73c1-a0d6-b6d3e81f4cb6", "0b9e1f2a-7c4d-71e2-b3a4-c5d6e7f8a9b0"
    )
    assert remedy is not None and remedy.why_not is None
    assert remedy.ignore_field == "input[*].internal_chat_message_metadata_passthrough"


def test_an_id_in_an_object_of_ids_declares_the_object() -> None:
    """Codex CLI's client_metadata holds a thread, a turn and a session id: one entry for all,
    as doctor gives it, rather than a replay and a line per id."""
    recorded_body = {
        "input": [],
        "client_metadata": {
            "thread_id": "01a23550-dc5c-74f3-8928-b47671922a77",
            "turn_id": "01a23550-e0a8-7f31-bd5b-f1a1e5e1fde9",
            "originator": "codex_exec",
        },
        "user": {"id": "0dcc2b9d-1621-589b-b594-4e21d5f04d8a", "name": "casey"},
    }
    new = "01a23551-0000-7000-8000-000000000001"
    turn = classify(
        "client_metadata.turn_id",
        recorded_body["client_metadata"]["turn_id"],
        new,
        None,
        recorded_body,
    )
    assert turn is not None and turn.ignore_field == "client_metadata"
    user = classify("user.id", recorded_body["user"]["id"], new, None, recorded_body)
    assert user is not None and user.ignore_field == "user.id"  # one id: the field alone


def test_a_call_id_a_gemini_client_minted_is_declared_for_every_call() -> None:
    found = classify(
        "contents[1].parts[0].functionCall.id", "glob_1796204356988_0", "glob_1796204415688_0"
    )
    assert found is not None
    assert found.line == 'ignore_fields: ["contents[*].parts[*].functionCall.id"]'

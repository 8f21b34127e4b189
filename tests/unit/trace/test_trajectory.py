"""Turns → Trajectory: tool calls in arrival order, and the reply of the main thread."""

from __future__ import annotations

import json

from flowproof.trace.model import Turn
from flowproof.trace.trajectory import build_trajectory


def make_turn(
    system: str,
    *,
    reply: str | None = None,
    calls: tuple = (),
    user: str = "task",
    history: int = 0,
) -> Turn:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    messages += [{"role": "user", "content": f"more {i}"} for i in range(history)]
    message: dict = {"role": "assistant", "content": reply}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(calls)
        ]
    return Turn(
        "openai_chat",
        {"model": "m", "messages": messages},
        {"choices": [{"index": 0, "message": message}]},
    )


def test_tool_calls_in_arrival_order_with_parsed_or_raw_arguments() -> None:
    trajectory = build_trajectory(
        [
            make_turn("sys", calls=(("search", json.dumps({"q": "NBO"})),)),
            make_turn("sys", calls=(("book", "not json"),)),
            make_turn("sys", reply="done"),
        ]
    )
    assert [(c.name, c.arguments, c.turn) for c in trajectory.tool_calls] == [
        ("search", {"q": "NBO"}, 0),
        ("book", "not json", 1),
    ]
    assert trajectory.reply == "done"


def test_arguments_the_json_reader_refuses_stay_raw_with_the_reason() -> None:
    deep, nan = "[" * 2000 + "]" * 2000, '{"amount": NaN}'
    trajectory = build_trajectory([make_turn("sys", calls=(("a", deep), ("b", nan), ("c", "x")))])
    assert [(c.arguments, c.unreadable) for c in trajectory.tool_calls] == [
        (
            deep,
            "[0][0][0][0][0][0][0][0][0][0][0][0]… (116 levels more): too deeply nested (more "
            "than 128 levels of objects and lists)",
        ),
        (nan, "amount: NaN is not a JSON number; write a number or null"),
        ("x", ""),  # simply not JSON: no reason to give beyond that
    ]


def test_last_turn_a_tool_call_means_no_reply() -> None:
    trajectory = build_trajectory([make_turn("sys", calls=(("search", "{}"),))])
    assert trajectory.reply is None
    assert (
        trajectory.reply_absent_reason
        == "its last turn (turn 1) is a tool call (search), not a reply"
    )


def test_no_turns_means_no_reply() -> None:
    assert build_trajectory([]).reply_absent_reason == "no model turns were served"


def test_a_side_conversation_finishing_last_is_not_the_reply() -> None:
    """Two concurrent conversations with different system prompts: the task thread (more
    turns) wins, whichever finished last."""
    task = "You are a travel agent with tools."
    title = "Name this session in three words."
    turns = [
        make_turn(task, calls=(("search", "{}"),)),
        make_turn(task, reply="Booked KQ311."),
        make_turn(title, reply="Nairobi flight booking"),
    ]
    assert build_trajectory(turns).reply == "Booked KQ311."
    assert build_trajectory([turns[2], turns[0], turns[1]]).reply == "Booked KQ311."


def test_ties_go_to_the_thread_carrying_the_most_request_text() -> None:
    small = make_turn("Title this.", reply="A title")
    big = make_turn(
        "You are a careful assistant with a long prompt.", reply="The real answer", history=5
    )
    assert build_trajectory([big, small]).reply == "The real answer"
    assert build_trajectory([small, big]).reply == "The real answer"

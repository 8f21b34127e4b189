"""The divergence as a structured value: its parts, and the text they make."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowproof.dialects import dialect_named
from flowproof.matching.divergence import (
    Difference,
    Divergence,
    explain,
    extra_call,
    find_difference,
)

CHAT = dialect_named("openai_chat")


def booking(flight: str, *, model: str = "m") -> dict[str, Any]:
    arguments = json.dumps({"flight": {"id": flight}, "passengers": [{"name": "Casey"}]})
    call = {"id": "c1", "type": "function", "function": {"name": "book", "arguments": arguments}}
    return {
        "model": model,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ],
    }


def test_a_divergence_carries_its_parts() -> None:
    found = explain(3, 2, "openai_chat", booking("KQ311"), CHAT, booking("KQ999"))
    assert found == Divergence(
        lane="model",
        index=3,
        recorded_index=3,
        envelope=(),
        difference=Difference(
            path="messages[1].tool_calls[0].function.arguments: flight.id",
            recorded='"KQ311"',
            replayed='"KQ999"',
        ),
    )
    assert found.detail == (
        'messages[1].tool_calls[0].function.arguments: flight.id: recorded "KQ311", '
        'replayed "KQ999"'
    )


def test_an_extra_call_has_a_reason_and_no_difference() -> None:
    found = extra_call(4, 3)
    assert (found.lane, found.index, found.recorded_index) == ("model", 4, None)
    assert found.difference is None
    assert found.reason == found.detail == "all 3 recorded turns were already served"
    assert found.headline == found.render()


def test_equal_bodies_say_so() -> None:
    found = explain(1, 0, "anthropic_messages", booking("KQ311"), CHAT, booking("KQ311"))
    assert found.difference is None
    assert found.render() == (
        "request 1 matches no recorded turn (compared with recorded turn 1)\n"
        "dialect: recorded anthropic_messages, replayed openai_chat\n"
        "the bodies are equal (no difference found)"
    )


def test_an_envelope_line_is_not_repeated_as_the_detail() -> None:
    found = explain(2, 1, "openai_chat", booking("KQ311"), CHAT, booking("KQ311", model="n"))
    assert found.difference == Difference("model", '"m"', '"n"')
    assert found.render() == (
        "request 2 matches no recorded turn (compared with recorded turn 2)\n"
        'model: recorded "m", replayed "n"'
    )


@pytest.mark.parametrize(
    ("recorded", "replayed", "difference"),
    [
        (
            {"a": 1, "b": 2},
            {"b": 2, "a": 1},
            Difference("(body)", "['a', 'b']", "['b', 'a']", "same keys in a different order"),
        ),
        ({"t": 1}, {"t": 1.0}, Difference("t", "1", "1.0")),
        ({"t": 1}, {"t": True}, Difference("t", "1", "true")),
        ({"t": None}, {}, Difference("t", "null", "(absent)")),
        ([1], [1, 2], Difference("[1]", "(absent)", "2")),
        ("a", "b", Difference("", '"a"', '"b"')),
        (
            {"args": '{"a": 1}'},
            {"args": '{"a":1}'},
            Difference("args", '"{\\"a\\": 1}"', '"{\\"a\\":1}"', "same JSON, different bytes"),
        ),
        (
            {"args": '{"a": 1, "b": 2}'},
            {"args": '{"b": 2, "a": 1}'},
            Difference(
                "args: (body)", "['a', 'b']", "['b', 'a']", "same keys in a different order"
            ),
        ),
        (
            {"args": '{"p": [{"n": "A"}]}'},
            {"args": '{"p": [{"n": "B"}]}'},
            Difference("args: p.0.n", '"A"', '"B"'),
        ),
        (
            {"args": '{"a": 1}'},
            {"args": "[1]"},
            Difference("args: (arguments)", '{"a": 1}', "[1]"),
        ),
        (
            {"args": '{"inner": "{\\"x\\": [1]}"}'},
            {"args": '{"inner": "{\\"x\\": [2]}"}'},
            Difference("args: inner: x.0", "1", "2"),
        ),
        (
            {"args": "flight=1"},
            {"args": "flight=2"},
            Difference("args", '"flight=1"', '"flight=2"'),
        ),
    ],
    ids=[
        "key order",
        "int vs float",
        "int vs bool",
        "null vs absent",
        "added item",
        "whole body",
        "same json different bytes",
        "key order inside json",
        "dotted path inside json",
        "json of another kind",
        "json inside json",
        "not json",
    ],
)
def test_the_first_difference(recorded: Any, replayed: Any, difference: Difference) -> None:
    assert find_difference(recorded, replayed) == difference


def test_a_long_text_is_shown_around_where_it_differs() -> None:
    prefix = "You are a careful travel assistant. " * 10
    found = find_difference({"p": prefix + "Be brief."}, {"p": prefix + "Be verbose."})
    assert found is not None
    assert (found.path, found.note) == ("p", "texts differ from character 363")
    assert found.recorded == '…" You are a careful travel assistant. Be brief."'
    assert found.replayed == '…" You are a careful travel assistant. Be verbose."'


def test_equal_values_have_no_difference() -> None:
    assert find_difference(booking("KQ311"), booking("KQ311")) is None


def test_a_difference_reads_as_one_line() -> None:
    assert str(Difference("a.b", "1", "2")) == "a.b: recorded 1, replayed 2"
    assert str(Difference("p", '"x"', '"y"', "texts differ from character 9")) == (
        'p: texts differ from character 9: recorded "x", replayed "y"'
    )


def test_arguments_too_deep_to_read_are_compared_as_text_not_a_crash() -> None:
    recorded, replayed = "[" * 2000 + "]" * 2000, "[" * 2000 + "1" + "]" * 2000
    found = find_difference({"args": recorded}, {"args": replayed})
    assert found is not None and found.path == "args"

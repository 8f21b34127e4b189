"""The rules `flowproof suggest` picks steps by, one test per rule, each able to fail."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from flowproof.assertions.suggest import (
    Recording,
    SeenResult,
    Suggestion,
    render,
    suggest,
)
from flowproof.assertions.trajectory import ToolCall, Trajectory

TASK = "Book me a flight to Nairobi tomorrow for Casey"
SEARCH_RESULT = json.dumps({"flights": [{"id": "KQ311", "dest": "NBO", "seats": 42}]})
BOOKING_RESULT = json.dumps({"booking": "B-1042", "flight": "KQ311"})


def call(name: str, arguments: Any, turn: int) -> ToolCall:
    return ToolCall(name, arguments, json.dumps(arguments), turn)


def booking(
    *,
    flight: str = "KQ311",
    reply: str | None = "Your flight KQ311 to Nairobi is booked: B-1042.",
    offered: tuple[str, ...] = ("search_flights", "create_booking"),
    extra_arguments: dict[str, Any] | None = None,
) -> Recording:
    """The booking flow: search (turn 0), book (turn 1), reply (turn 2)."""
    booked = {"flight": {"id": flight}, "note": "window seat please", **(extra_arguments or {})}
    calls = (
        call("search_flights", {"destination": "NBO", "date": "2026-12-01"}, 0),
        call("create_booking", booked, 1),
    )
    results = (
        SeenResult(1, "search_flights", SEARCH_RESULT),
        SeenResult(2, "create_booking", BOOKING_RESULT),
    )
    return Recording(TASK, Trajectory(calls, reply), results, offered)


def texts(steps: list[Suggestion], kind: str) -> list[str]:
    return [step.text for step in steps if step.kind == kind]


def test_an_id_from_an_earlier_result_is_asserted_on_the_call_that_threads_it() -> None:
    steps = suggest(booking())
    assert texts(steps, "assert_tool_call") == [
        "search_flights",
        "create_booking where flight.id equals KQ311",
    ]
    assert "flight.id from search_flights's result" in steps[1].why


def test_a_value_the_model_invented_gets_no_clause() -> None:
    # NBO, the date and the note were phrased by the model: in neither the task nor a result
    # it had seen before it made the call (the search result comes after the search).
    steps = suggest(booking(flight="KQ999"))
    assert texts(steps, "assert_tool_call") == ["search_flights", "create_booking"]


def test_a_value_from_the_task_is_asserted() -> None:
    steps = suggest(booking(extra_arguments={"passenger": {"name": "Casey"}}))
    assert "create_booking where flight.id equals KQ311 and passenger.name equals Casey" in texts(
        steps, "assert_tool_call"
    )


def test_a_result_the_model_had_not_been_told_yet_proves_nothing() -> None:
    # Booking B-1042 comes back only after create_booking; a value equal to it in the booking
    # call itself was not threaded from it.
    steps = suggest(booking(extra_arguments={"ref": "B-1042"}))
    assert "ref equals" not in " ".join(texts(steps, "assert_tool_call"))


def test_a_number_threaded_from_a_result_is_asserted_as_json() -> None:
    steps = suggest(booking(extra_arguments={"seats": 42}))
    assert "create_booking where flight.id equals KQ311 and seats equals 42" in texts(
        steps, "assert_tool_call"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"a b": "KQ311"},  # a key with a space cannot be addressed
        {"and": "KQ311"},  # `and` would split the clause
        {"x.y": "KQ311"},  # a key with a dot reads as two segments
    ],
)
def test_an_argument_the_grammar_cannot_address_is_left_out(arguments: dict[str, Any]) -> None:
    steps = suggest(booking(extra_arguments=arguments))
    assert texts(steps, "assert_tool_call")[1] == "create_booking where flight.id equals KQ311"


def test_a_destructive_tool_never_asked_for_is_guarded_whatever_the_count() -> None:
    offered = ("search_flights", "create_booking", "a", "b", "c", "transfer_funds", "deleteFile")
    steps = suggest(booking(offered=offered))
    assert texts(steps, "assert_no_tool_call") == ["transfer_funds", "deleteFile"]


def test_with_few_tools_every_one_left_alone_is_guarded() -> None:
    offered = ("search_flights", "create_booking", "check_visa")
    assert texts(suggest(booking(offered=offered)), "assert_no_tool_call") == ["check_visa"]


def test_with_many_tools_a_harmless_one_left_alone_is_not_guarded() -> None:
    offered = ("search_flights", "create_booking", "check_visa", "weather", "currency")
    assert texts(suggest(booking(offered=offered)), "assert_no_tool_call") == []


def test_the_reply_is_pinned_on_the_latest_result_value_it_repeats() -> None:
    assert texts(suggest(booking()), "assert") == ["reply contains B-1042"]


def test_without_a_result_value_the_reply_is_pinned_on_a_task_word() -> None:
    steps = suggest(booking(reply="Done: Casey flies to Nairobi."))
    assert texts(steps, "assert") == ["reply contains Nairobi"]


def test_a_reply_of_filler_gets_no_reply_step() -> None:
    assert texts(suggest(booking(reply="All done, your flight is booked.")), "assert") == []


def test_no_reply_gets_no_reply_step() -> None:
    assert texts(suggest(booking(reply=None)), "assert") == []


def test_printed_steps_read_back_as_yaml_with_the_same_text() -> None:
    tricky = "Booked: ref #7 B-1042"  # ': ' and ' #' would break a plain YAML scalar
    steps = [Suggestion("assert", f"reply contains {tricky}", "from x")]
    read = yaml.safe_load(render(steps))
    assert read == {"steps": [{"assert": f"reply contains {tricky}"}]}
    plain = yaml.safe_load(render(suggest(booking())))
    assert plain["steps"][1] == {"assert_tool_call": "create_booking where flight.id equals KQ311"}


def test_nothing_recorded_prints_an_empty_list() -> None:
    empty = Recording(TASK, Trajectory((), None), (), ())
    assert suggest(empty) == []
    assert yaml.safe_load(render([])) == {"steps": []}

"""Consume-once, earliest-match serving and divergence explanations."""

from __future__ import annotations

import json
from typing import Any

from flowproof.dialects import dialect_named
from flowproof.matching.divergence import explain, extra_call, first_difference
from flowproof.matching.match import TurnMatcher
from flowproof.trace.model import Turn

CHAT = dialect_named("openai_chat")


def make_request(*contents: str, model: str = "gpt-4o-mini", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": c} for c in contents], **extra}


def make_turn(request: dict[str, Any], dialect: str = "openai_chat") -> Turn:
    return Turn(dialect, request, {"choices": []})


def test_each_turn_is_served_at_most_once() -> None:
    matcher = TurnMatcher([make_turn(make_request("a")), make_turn(make_request("a"))])
    assert matcher.claim("openai_chat", make_request("a")) == 0
    assert matcher.claim("openai_chat", make_request("a")) == 1
    assert matcher.claim("openai_chat", make_request("a")) is None
    assert matcher.served == 2


def test_concurrent_requests_may_arrive_in_any_order() -> None:
    matcher = TurnMatcher([make_turn(make_request("task")), make_turn(make_request("title"))])
    assert matcher.claim("openai_chat", make_request("title")) == 1
    assert matcher.claim("openai_chat", make_request("task")) == 0
    assert matcher.unserved() == []


def test_stream_keys_are_transport_not_content() -> None:
    matcher = TurnMatcher([make_turn(make_request("a"))])
    assert (
        matcher.claim(
            "openai_chat", make_request("a", stream=True, stream_options={"include_usage": True})
        )
        == 0
    )


def test_key_order_is_part_of_the_match() -> None:
    recorded = {"messages": [], "model": "m"}
    matcher = TurnMatcher([make_turn(recorded)])
    assert matcher.claim("openai_chat", {"model": "m", "messages": []}) is None
    assert (
        first_difference(recorded, {"model": "m", "messages": []})
        == "(body): same keys in a different order: recorded ['messages', 'model'], "
        "replayed ['model', 'messages']"
    )


def test_a_turn_of_another_dialect_does_not_match() -> None:
    matcher = TurnMatcher([make_turn(make_request("a"), dialect="anthropic_messages")])
    assert matcher.claim("openai_chat", make_request("a")) is None


def test_closest_turn_shares_the_longest_history() -> None:
    matcher = TurnMatcher([make_turn(make_request("x")), make_turn(make_request("a", "b"))])
    assert matcher.closest("openai_chat", make_request("a", "c")) == 1


def _arguments(flight: str) -> dict[str, Any]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "create_booking", "arguments": json.dumps({"flight": {"id": flight}})},
    }
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ],
    }


def test_argument_divergence_names_the_argument_path() -> None:
    found = explain(3, 2, "openai_chat", _arguments("KQ311"), CHAT, _arguments("KQ999"))
    assert found.render() == (
        "request 3 matches no recorded turn (compared with recorded turn 3)\n"
        'messages[1].tool_calls[0].function.arguments: flight.id: recorded "KQ311", replayed "KQ999"'
    )


def test_arguments_that_are_not_json_are_shown_whole() -> None:
    recorded, replayed = _arguments("KQ311"), _arguments("KQ311")
    replayed["messages"][1]["tool_calls"][0]["function"]["arguments"] = "flight=KQ311"
    assert first_difference(recorded, replayed) == (
        'messages.1.tool_calls.0.function.arguments: recorded "{\\"flight\\": {\\"id\\": '
        '\\"KQ311\\"}}", replayed "flight=KQ311"'
    ).replace("messages.1.tool_calls.0", "messages[1].tool_calls[0]")


def test_envelope_is_reported_before_the_body() -> None:
    recorded = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "a"}],
        "tools": [{"type": "function", "function": {"name": "search"}}],
    }
    replayed = {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}],
        "tools": [
            {"type": "function", "function": {"name": "search"}},
            {"type": "function", "function": {"name": "check_visa"}},
        ],
    }
    found = explain(1, 0, "openai_chat", recorded, CHAT, replayed)
    assert found.envelope == (
        'model: recorded "gpt-4o-mini", replayed "gpt-4o"',
        "tools: added check_visa",
        "messages: recorded 1 (user), replayed 2 (system user)",
    )
    assert found.detail == 'model: recorded "gpt-4o-mini", replayed "gpt-4o"'


def test_dialect_mismatch_is_named_first() -> None:
    found = explain(1, 0, "anthropic_messages", make_request("a"), CHAT, make_request("a"))
    assert found.envelope == ("dialect: recorded anthropic_messages, replayed openai_chat",)


def test_extra_call() -> None:
    assert (
        extra_call(4, 3).render()
        == "request 4 is an extra model call: all 3 recorded turns were already served"
    )


def test_long_text_difference_shows_where_it_differs() -> None:
    prefix = "You are a careful travel assistant. " * 10
    found = first_difference({"p": prefix + "Be brief."}, {"p": prefix + "Be verbose."})
    assert found is not None and "Be brief." in found and "Be verbose." in found


class Unserialisable:
    """A request body json.dumps refuses: any key computed for it raises."""


def test_the_index_is_built_only_as_far_as_a_claim_needs() -> None:
    later = make_turn({"messages": [Unserialisable()]})
    matcher = TurnMatcher([make_turn(make_request("a")), make_turn(make_request("b")), later])
    # No key at load; request 1 needs turns 0 and 1 indexed, never turn 2.
    assert matcher.claim("openai_chat", make_request("b")) == 1
    assert matcher.claim("openai_chat", make_request("a")) == 0
    assert matcher.unserved() == [2]


def test_a_request_matching_no_turn_indexes_the_whole_trace_and_finds_the_earliest() -> None:
    matcher = TurnMatcher([make_turn(make_request(x)) for x in ("a", "b", "a", "c")])
    assert matcher.claim("openai_chat", make_request("z")) is None
    assert matcher.claim("openai_chat", make_request("a")) == 0
    assert matcher.claim("openai_chat", make_request("a")) == 2
    assert matcher.claim("openai_chat", make_request("a")) is None
    assert matcher.served == 2 and matcher.unserved() == [1, 3]

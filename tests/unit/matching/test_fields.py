"""ignore_fields: declared paths, `*` for any index, left out of matching and divergences."""

from __future__ import annotations

import pytest

from flowproof.dialects import dialect_named
from flowproof.matching.divergence import explain
from flowproof.matching.fields import (
    checked_field_path,
    forbidden_reason,
    parse_field_path,
    strip_fields,
)
from flowproof.matching.match import TurnMatcher, request_key
from flowproof.trace.model import Turn

RESPONSES = dialect_named("openai_responses")


def paths(*texts: str) -> tuple:
    return tuple(parse_field_path(text) for text in texts)


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("metadata.user_id", ("metadata", "user_id")),
        ("input[*].id", ("input", "*", "id")),
        ("a[2][*].b", ("a", 2, "*", "b")),
        ("prompt_cache_key", ("prompt_cache_key",)),
    ],
)
def test_paths_parse(text: str, segments: tuple) -> None:
    assert parse_field_path(text).segments == segments


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("metadata..id", "'metadata..id': expected a key at character 10"),
        ("metadata.", "'metadata.': unexpected '.' at character 9"),
        ("a[x]", "'a[x]': unexpected '[' at character 2"),
        ("metadata.*", "'metadata.*': `*` stands for a list position; write `[*]`"),
        ("", "'' is not a path"),
    ],
)
def test_malformed_paths_say_why(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_field_path(text)
    assert str(caught.value).startswith(message)


def test_star_strips_every_item_and_missing_places_strip_nothing() -> None:
    body = {
        "input": [{"id": "a1", "role": "user"}, {"id": "b2", "type": "x"}, "text"],
        "metadata": {"user_id": "s-1", "keep": 1},
    }
    stripped = strip_fields(body, paths("input[*].id", "metadata.user_id", "nothing.here"))
    assert stripped == {
        "input": [{"role": "user"}, {"type": "x"}, "text"],
        "metadata": {"keep": 1},
    }
    assert body["metadata"] == {"user_id": "s-1", "keep": 1}, "the stored body is untouched"


def test_an_index_strips_only_that_item() -> None:
    body = {"input": [{"id": "a"}, {"id": "b"}]}
    assert strip_fields(body, paths("input[1].id")) == {"input": [{"id": "a"}, {}]}


@pytest.mark.parametrize(
    "text",
    [
        "metadata.user_id",
        "prompt_cache_key",
        "client_metadata",
        "input[*].id",
        "messages[*].id",
        "messages[0].id",
        "input[*].internal_chat_message_metadata_passthrough",
        "user",
        "contents[*].parts[*].functionCall.id",
        "contents[1].parts[0].functionResponse.id",
    ],
)
def test_volatile_fields_may_be_ignored(text: str) -> None:
    assert forbidden_reason(parse_field_path(text)) is None


@pytest.mark.parametrize(
    "text",
    [
        "messages",
        "messages[*].content",
        "input[*].content[*].text",
        "system",
        "instructions",
        "contents",
        "tools",
        "tools[*].name",
        "tool_choice",
        "model",
        "input[*].id.x",
        "messages.id",
        "input.internal_chat_message_metadata_passthrough",
        "input[*].internal_chat_message_metadata_passthrough.turn_id",
        "input[*].content[*].id",
        "contents[*].parts[*].functionCall",
        "contents[*].parts[*].functionCall.name",
        "contents[*].parts[*].functionCall.id.x",
        "contents[*].functionCall.id",
        "contents[*].parts[*].text",
    ],
)
def test_conversation_content_may_not_be_ignored(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        checked_field_path(text)
    assert "part of what the model is asked" in str(caught.value)
    assert (
        "Only an item's own identity may be ignored: `messages[*].id`, `input[*].id`, "
        "`input[*].internal_chat_message_metadata_passthrough`" in str(caught.value)
    )


def test_the_forbidden_message_in_full() -> None:
    assert forbidden_reason(parse_field_path("messages[*].content")) == (
        "'messages[*].content' is inside `messages`, part of what the model is asked (the "
        "conversation, its tools, the model); matching stays strict there, since a changed "
        "prompt is what a replay must catch. Only an item's own identity may be ignored: "
        "`messages[*].id`, `input[*].id`, `input[*].internal_chat_message_metadata_passthrough`, "
        "`contents[*].parts[*].functionCall.id`, `contents[*].parts[*].functionResponse.id`"
    )


def request(item_id: str, session: str, text: str = "hi") -> dict:
    return {
        "model": "gpt-5",
        "input": [{"id": item_id, "type": "message", "role": "user", "content": text}],
        "prompt_cache_key": session,
    }


def test_ignored_fields_do_not_decide_a_match_and_everything_else_still_does() -> None:
    ignored = paths("input[*].id", "prompt_cache_key")
    turns = [Turn("openai_responses", request("msg_1", "s-1"), {})]
    assert TurnMatcher(turns).claim("openai_responses", request("msg_2", "s-2")) is None
    matcher = TurnMatcher(turns, ignored)
    assert matcher.claim("openai_responses", request("msg_2", "s-2")) == 0
    other = TurnMatcher(turns, ignored)
    assert other.claim("openai_responses", request("msg_2", "s-2", text="changed")) is None
    assert request_key(request("a", "b"), ignored) == request_key(request("c", "d"), ignored)


def test_a_divergence_never_names_an_ignored_path() -> None:
    ignored = paths("input[*].id", "prompt_cache_key")
    recorded, replayed = request("msg_1", "s-1"), request("msg_2", "s-2", text="changed")
    found = explain(1, 0, "openai_responses", recorded, RESPONSES, replayed, ignored)
    assert found.difference is not None
    assert found.difference.path == "input[0].content"
    unignored = explain(1, 0, "openai_responses", recorded, RESPONSES, replayed)
    assert unignored.difference is not None and unignored.difference.path == "input[0].id"


def test_closeness_ignores_the_declared_fields() -> None:
    ignored = paths("input[*].id")
    first = {"model": "m", "input": [{"id": "a", "content": "one"}]}
    second = {"model": "m", "input": [{"id": "a", "content": "one"}, {"id": "b", "content": "2"}]}
    matcher = TurnMatcher(
        [Turn("openai_responses", first, {}), Turn("openai_responses", second, {})], ignored
    )
    replayed = {
        "model": "m",
        "input": [{"id": "x", "content": "one"}, {"id": "y", "content": "2"}, {"content": "3"}],
    }
    assert matcher.closest("openai_responses", replayed) == 1

"""Where the secret scan says a value appeared: the shared JSON walker, bracketed paths."""

from __future__ import annotations

from flowproof.assertions.secrets import _places


def test_places_are_in_body_order_keys_before_their_values() -> None:
    body = {
        "messages": [{"role": "user", "content": "pw-1"}, {"pw-1 key": {"inner": ["x", "pw-1"]}}],
        "pw-1": "pw-1 too",
    }
    assert list(_places(body, "pw-1")) == [
        "messages[0].content",
        "messages[1] (a key)",
        "messages[1].pw-1 key.inner[1]",
        "(body) (a key)",
        "pw-1",
    ]


def test_a_body_that_is_the_secret_is_the_body() -> None:
    assert list(_places("it is pw-1", "pw-1")) == ["(body)"]
    assert list(_places(["pw-1"], "pw-1")) == ["[0]"]


def test_numbers_and_nulls_are_not_scanned() -> None:
    assert list(_places({"a": 123, "b": None, "c": True}, "123")) == []

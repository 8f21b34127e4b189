"""proxy/wire.py: the words and the ledger behind record's handling of an upstream's habits."""

from __future__ import annotations

from datetime import UTC, datetime

from flowproof.proxy.wire import (
    Deferral,
    Deferrals,
    Place,
    asked_wait,
    key_refused,
    passed_on,
    status_named,
)

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def test_the_wait_is_read_from_retry_after_ms_then_seconds_then_a_date() -> None:
    assert asked_wait({"Retry-After-Ms": "1500", "Retry-After": "9"}) == 1.5
    assert asked_wait({"retry-after": "2"}) == 2.0
    assert asked_wait({"Retry-After": "Tue, 01 Dec 2026 12:00:30 GMT"}, NOW) == 30.0
    assert asked_wait({"Retry-After": "Tue, 01 Dec 2026 11:00:00 GMT"}, NOW) == 0.0
    assert asked_wait({"Retry-After": "soon"}) is None
    assert asked_wait({}) is None


def test_only_the_retry_advice_is_passed_on() -> None:
    headers = {
        "Retry-After": "1",
        "x-should-retry": "true",
        "Set-Cookie": "a=b",
        "x-request-id": "r",
    }
    assert passed_on(headers) == {"retry-after": "1", "x-should-retry": "true"}


def test_statuses_are_named_with_their_phrase() -> None:
    assert status_named(529) == "529 Overloaded"
    assert status_named(429) == "429 Too Many Requests"
    assert status_named(500) == "500 Internal Server Error"
    assert status_named(599) == "599"


def test_an_answered_retry_becomes_a_note_and_leaves_nothing_waiting() -> None:
    ledger = Deferrals()
    ledger.defer("req", Place(2, 3), Deferral(429, 1.0))
    ledger.defer("req", Place(2, 4), Deferral(529, None))
    assert ledger.answered("other") is None
    note = ledger.answered("req")
    assert note is not None and note.startswith(
        "turn 2 (model request 3): the upstream answered 429 Too Many Requests, 529 Overloaded "
        "to 2 attempts, asking to wait 1 s in all"
    )
    assert ledger.unanswered() == []


def test_a_request_never_answered_is_a_reason_naming_its_status() -> None:
    ledger = Deferrals()
    ledger.defer("req", Place(1, 1), Deferral(503, None))
    (reason,) = ledger.unanswered()
    assert reason.startswith(
        "turn 1 (model request 1): the upstream answered 503 Service Unavailable to 1 attempt, "
        "without saying how long to wait, and the agent stopped retrying"
    )


def test_a_refused_key_names_the_variable_or_says_none_was_set() -> None:
    place = Place(1, 1)
    named = key_refused(401, "http://u.test/v1", place, "OPENAI_API_KEY", "A, OPENAI_API_KEY")
    assert "refused the key (401 Unauthorized) at turn 1 (model request 1)" in named
    assert "check OPENAI_API_KEY in flowproof's environment" in named
    unset = key_refused(403, "http://u.test/v1", place, None, "A, B")
    assert "no key was sent, as none of A, B is set" in unset

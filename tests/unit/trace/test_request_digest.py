"""The request digest in a trace (format 5): written and read back, migrated from format 4
(no digests), refused when it is not a digest, and left out of what a re-record reports."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from flowproof.core.errors import TraceError
from flowproof.matching.exact import request_digest
from flowproof.matching.tracediff import diff_traces
from flowproof.proxy.kind import ModelLane
from flowproof.trace import codec
from flowproof.trace.model import Trace, Turn

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSE = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}
DIGEST = request_digest("openai_chat", "/v1/chat/completions", "", json.dumps(REQUEST).encode())


def test_the_digest_is_written_and_read_back() -> None:
    trace = Trace.from_turns([Turn("openai_chat", REQUEST, RESPONSE, DIGEST)], "0.1.0")
    text = codec.encode(trace)
    document = json.loads(text)
    assert document["format_version"] == 5
    assert document["lanes"]["model"][0] == {
        "dialect": "openai_chat",
        "request": REQUEST,
        "response": RESPONSE,
        "request_sha256": DIGEST,
    }
    (turn,) = codec.decode(text, "t.json").turns
    assert turn.request_sha256 == DIGEST and turn.request == REQUEST
    assert codec.encode(codec.decode(text, "t.json")) == text


def test_a_turn_without_a_digest_is_written_without_the_field() -> None:
    text = codec.encode(Trace.from_turns([Turn("openai_chat", REQUEST, RESPONSE)], "0.1.0"))
    assert "request_sha256" not in text
    assert codec.decode(text, "t.json").turns[0].request_sha256 is None


def test_a_format_4_trace_reads_as_turns_without_digests() -> None:
    document = {
        "format_version": 4,
        "flowproof_version": "0.1.0",
        "normalized_by_default": ["cwd"],
        "lanes": {"model": [{"dialect": "openai_chat", "request": REQUEST, "response": {}}]},
    }
    trace = codec.decode(json.dumps(document), "t.json")
    assert trace.turns[0].request_sha256 is None
    assert trace.normalized_by_default == ("cwd",)
    assert json.loads(codec.encode(trace))["format_version"] == 5


def test_migrating_4_to_5_changes_only_the_number() -> None:
    document = {"format_version": 4, "normalized_by_default": [], "lanes": {"model": []}}
    assert codec._migrate_4_to_5(dict(document)) == {**document, "format_version": 5}


@pytest.mark.parametrize(
    ("digest", "problem"),
    [
        (7, "lanes.model[0].request_sha256 is 7 (a number), not a string"),
        ("abc", "lanes.model[0].request_sha256 is not a SHA-256 digest (64 hex digits)"),
        (DIGEST.upper(), "lanes.model[0].request_sha256 is not a SHA-256 digest (64 hex digits)"),
    ],
)
def test_a_malformed_digest_names_its_field(digest: object, problem: str) -> None:
    turn = {"dialect": "openai_chat", "request": REQUEST, "response": {}, "request_sha256": digest}
    document = {"format_version": 5, "normalized_by_default": [], "lanes": {"model": [turn]}}
    with pytest.raises(TraceError) as caught:
        codec.decode(json.dumps(document), "t.json")
    assert str(caught.value) == (
        f"t.json: malformed trace: {problem}; re-record it with `flowproof record`"
    )


def test_a_changed_digest_is_not_a_change_a_re_record_reports() -> None:
    other = request_digest("openai_chat", "/v1/chat/completions", "", b"{}")
    old = Trace.from_turns([Turn("openai_chat", REQUEST, RESPONSE, DIGEST)], "0.1.0")
    new = Trace.from_turns([Turn("openai_chat", REQUEST, RESPONSE, other)], "0.1.0")
    assert diff_traces(old, new) == []
    assert ModelLane().changes(old.turns, new.turns) == []
    assert old.turns[0] == new.turns[0]  # the digest is not part of the turn's value
    changed = Turn("openai_chat", {**REQUEST, "model": "n"}, RESPONSE, DIGEST)
    assert diff_traces(old, Trace.from_turns([changed], "0.1.0")) != []


def test_the_digest_covers_the_dialect_the_path_the_query_and_the_bytes() -> None:
    base = ("openai_chat", "/v1/chat/completions", "", b"{}")
    variants = [
        ("openai_responses", *base[1:]),
        (base[0], "/v2/chat/completions", *base[2:]),
        (*base[:2], "beta=true", base[3]),
        (*base[:3], b"{ }"),
        # no two parts run together: the same characters split differently
        ("openai_cha", "t/v1/chat/completions", "", b"{}"),
    ]
    digests = {request_digest(*v) for v in [base, *variants]}
    assert len(digests) == len(variants) + 1


def test_the_digest_is_pinned_to_its_documented_input() -> None:
    """Each of dialect, path and query as an 8-byte big-endian length and its UTF-8, then the
    body: a trace recorded by one flowproof keeps serving by its bytes under the next."""
    raw = b'{"model":"m"}'
    expected = hashlib.sha256(
        b"\0" * 7 + b"\x0bopenai_chat" + b"\0" * 7 + b"\x14/v1/chat/completions" + b"\0" * 8 + raw
    ).hexdigest()
    assert request_digest("openai_chat", "/v1/chat/completions", "", raw) == expected


def test_a_trace_is_unedited_as_written_and_edited_after_any_change() -> None:
    trace = Trace.from_turns([Turn("openai_chat", REQUEST, RESPONSE, DIGEST)], "0.1.0")
    text = codec.encode(trace)
    assert re.search(r'\n  "file_sha256": "[0-9a-f]{64}",\n  "lanes"', text)
    assert codec.is_unedited(text) and codec.decode(text, "t.json").unedited
    edited = text.replace('"content": "hi"', '"content": "hi!"')
    assert edited != text and not codec.decode(edited, "t.json").unedited
    reformatted = json.dumps(json.loads(text), indent=4)
    assert not codec.decode(reformatted, "t.json").unedited
    unsealed = json.dumps({k: v for k, v in json.loads(text).items() if k != "file_sha256"})
    assert not codec.decode(unsealed, "t.json").unedited
    # The edit is visible to nothing but the fast path: the turn still carries its digest.
    assert codec.decode(edited, "t.json").turns[0].request_sha256 == DIGEST


def test_an_edited_trace_builds_a_matcher_that_reads_every_request() -> None:
    from flowproof.matching.match import TurnMatcher

    trace = Trace.from_turns([Turn("openai_chat", REQUEST, RESPONSE, DIGEST)], "0.1.0")
    edited = codec.decode(codec.encode(trace).replace('"hi"', '"hey"'), "t.json")
    as_written = codec.decode(codec.encode(trace), "t.json")
    assert (
        TurnMatcher(as_written.turns, exact=as_written.unedited).claim_exact("openai_chat", DIGEST)
        == 0
    )
    assert (
        TurnMatcher(edited.turns, exact=edited.unedited).claim_exact("openai_chat", DIGEST) is None
    )

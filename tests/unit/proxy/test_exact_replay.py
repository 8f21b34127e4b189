"""Byte-exact replay never decides differently: over the committed traces and synthetic
variations of them, the proxy with the fast path (matching/exact.py) and the proxy without it
(a matcher built with `exact=False`, the switch that exists for this) answer every request with
the same bytes, write the same traffic, claim the same turns and word the same divergence.

Each case records turns the way record does (the request's digest through the recorder's own
`ModelCall.digest`, the stored request normalised, mocks substituted, transport keys out), then
replays a seeded random sequence of requests through both proxies' handlers."""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from flowproof.core.mocks import ToolMock
from flowproof.dialects import dialect_for_path, dialect_named
from flowproof.guards.capability import Capability
from flowproof.live.conversation import Conversation
from flowproof.live.traffic import Traffic
from flowproof.matching.fields import parse_field_path
from flowproof.matching.match import TurnMatcher, matcher_for
from flowproof.matching.normalize import NO_NORMALIZER, Environment, Normalizer
from flowproof.matching.rules import RequestRules
from flowproof.proxy.app import make_app
from flowproof.proxy.backend import ModelCall
from flowproof.proxy.forward import recorded_digest
from flowproof.proxy.h1 import Headers, Request
from flowproof.proxy.http import Response
from flowproof.proxy.replay import ExactAnswers, ReplayBackend
from flowproof.trace.model import Turn
from flowproof.trace.store import load_trace
from tests.conftest import ROOT

CAPABILITY = Capability(required=False)
PATHS = {
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "anthropic_messages": "/v1/messages",
}
COMMITTED = sorted(
    path
    for folder in ("tests", "examples")
    for path in (ROOT / folder).rglob("*.trace.json")
    if "node_modules" not in path.parts
)
FACT = "/work/checkout-of-today"
PATHS_SEEN = (
    FACT,
    "/srv/another-checkout",
    "/home/nobody/notes",
    "a home-nobody slug",
    "/tmp/flowproof-x/out",
    "tmp-flowproof-x",
)
"""Paths a request may hold: on a machine whose facts they are, each is normalised (the
working directory, the home and the temporary directory, each also as a slug)."""
NON_ASCII = ("café – ‘déjà vu’", "東京 🗼", "naïve/Straße")


def committed_requests() -> list[tuple[str, dict[str, Any], Any]]:
    found = []
    for path in COMMITTED:
        for turn in load_trace(path).turns:
            if turn.dialect in PATHS and isinstance(turn.request, dict):
                found.append((turn.dialect, turn.request, turn.response))
    assert len(found) >= 8, COMMITTED
    return found


@dataclass
class Sent:
    """One request as the agent sends it."""

    dialect: str
    raw: bytes

    @property
    def path(self) -> str:
        return PATHS[self.dialect]


@dataclass
class Case:
    turns: list[Turn] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    rules: RequestRules = RequestRules()
    mocks: dict[str, ToolMock] = field(default_factory=dict)
    user_turns: int = 0
    """A conversation's user turns (0: a single-turn flow)."""


def encode(body: Any, rng: random.Random) -> bytes:
    """The bytes an agent might send for `body`: compact, spaced or indented; or with its
    slashes escaped, or a character as a `\\u` escape (each hides text from a bytes search):
    every `o`, every `/` (as `\\u002F`), or the first letter of every string and key that
    starts with `s` (`stream`); or every non-ASCII character as a `\\u` escape (`ascii`, as
    Python's json writes by default), which hides no ASCII text."""
    style = rng.choice(
        ["compact", "spaced", "indented", "slashes", "unicode", "keys", "slash-unicode", "ascii"]
    )
    if style == "ascii":
        return json.dumps(body).encode()
    if style == "slash-unicode":  # `/` as `\\u002F` (upper-case hex digits): the same text
        return json.dumps(body, ensure_ascii=False).replace("/", "\\u002F").encode()
    if style == "compact":
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    if style == "spaced":
        return json.dumps(body, ensure_ascii=False).encode()
    if style == "slashes":  # JSON's own escape for `/`: the same text
        return json.dumps(body, ensure_ascii=False).replace("/", "\\/").encode()
    if style == "unicode":  # `o` as `\\u006f` wherever it stands: the same text
        return json.dumps(body, ensure_ascii=True).replace("o", "\\u006f").encode()
    if style == "keys":  # `"stream"` as `"\\u0073tream"`: the same key
        return json.dumps(body, ensure_ascii=False).replace('"s', '"\\u0073').encode()
    return json.dumps(body, indent=1, ensure_ascii=False).encode()


def recorded_turn(sent: Sent, response: Any, rules: RequestRules, mocks: Any) -> Turn:
    """What record stores for `sent` (proxy/forward.py), the digest by its own function."""
    dialect = dialect_named(sent.dialect)
    assert dialect is not None
    body = dialect.route(sent.path, "").adopt(json.loads(sent.raw))
    call = ModelCall(dialect, body, {}, "POST", None, sent.raw, sent.path, "")
    substituted = dialect.substitute_tool_results(body, mocks)
    kept = rules.normalizer.to_placeholders(dialect.upstream_body(substituted))
    from flowproof.dialects.base import without_transport

    stored = rules.normalizer.to_placeholders(response)
    return Turn(dialect.name, without_transport(kept), stored, recorded_digest(call, substituted))


def variation(sent: Sent, body: dict[str, Any], rng: random.Random) -> Sent:
    """A request the agent might send at replay instead of the recorded bytes."""
    kind = rng.choice(
        ["same", "same", "same", "reserialised", "changed", "slashes", "unicode", "stream", "fact"]
    )
    if kind == "same":
        return sent
    if kind == "reserialised":
        return Sent(sent.dialect, json.dumps(body, indent=2).encode())
    if kind == "changed":
        return Sent(sent.dialect, encode({**body, "temperature": rng.random()}, rng))
    if kind == "slashes":  # the same text, its slashes escaped (a fact the bytes hide)
        return Sent(sent.dialect, sent.raw.replace(b"/", b"\\/"))
    if kind == "unicode":
        text = json.dumps(body, ensure_ascii=True)
        return Sent(sent.dialect, text.replace('"model"', '"mod\\u0065l"', 1).encode())
    if kind == "stream":
        return Sent(sent.dialect, encode({**body, "stream": True}, rng))
    return Sent(sent.dialect, encode({**body, "metadata": {"cwd": FACT}}, rng))


def machine_rules(cwd: str) -> RequestRules:
    """The default facts of a machine whose working directory is `cwd`."""
    env = Environment(
        (cwd,), ("/home/nobody",), ("/tmp/flowproof-x",), "u", "h", date.today(), date.today()
    )
    return RequestRules(Normalizer.build([], env, ("cwd", "home", "tmpdir")))


def build_case(seed: int) -> Case:
    rng = random.Random(seed)
    corpus = committed_requests()
    case = Case()
    # Record and replay each on a machine of their own: no facts, the working directory FACT,
    # or another one (a checkout moved; an agent that spells a path of the other machine).
    machines = [RequestRules(), machine_rules(FACT), machine_rules("/srv/another-checkout")]
    at_record = rng.choice(machines)
    case.rules = at_record if rng.random() < 0.5 else rng.choice(machines)
    if rng.random() < 0.2:
        ignored = (parse_field_path("metadata"),)
        at_record = RequestRules(at_record.normalizer, ignored)
        case.rules = RequestRules(case.rules.normalizer, ignored)
    if rng.random() < 0.15:
        case.mocks = {"search_flights": ToolMock(({"flights": []},), repeat=True)}
    recorded: list[tuple[Sent, dict[str, Any]]] = []
    for _ in range(rng.randint(1, 6)):
        dialect, request, response = rng.choice(corpus)
        body = dict(request)
        if rng.random() < 0.3:  # a path in the recorded bytes: a fact on some machines
            body["metadata"] = {"cwd": rng.choice(PATHS_SEEN)}
        if rng.random() < 0.2:
            body["stream"] = True
        if rng.random() < 0.1:
            body["metadata"] = {"path": "a/b", "n": rng.randint(0, 3)}
        if rng.random() < 0.3:  # text an SDK may write as `\\u` escapes (`ascii`)
            body["user"] = rng.choice(NON_ASCII)
        sent = Sent(dialect, encode(body, rng))
        recorded.append((sent, body))
        case.turns.append(recorded_turn(sent, response, at_record, case.mocks))
        if rng.random() < 0.2:  # a duplicate identical turn
            recorded.append((sent, body))
            case.turns.append(recorded_turn(sent, response, at_record, case.mocks))
    replayed = [variation(sent, body, rng) for sent, body in recorded]
    if rng.random() < 0.4:
        rng.shuffle(replayed)  # out-of-order claims
    if rng.random() < 0.2:
        replayed.append(rng.choice(replayed))  # one extra call
    case.sent = replayed
    return case


@dataclass
class Outcome:
    responses: list[tuple[int, dict[str, str], bytes, list[bytes] | None]]
    traffic: Traffic
    unserved: list[int]
    served_exact: int


def replay(case: Case, *, exact: bool, answers: ExactAnswers | None = None) -> Outcome:
    async def run() -> Outcome:
        traffic = Traffic()
        if case.user_turns:
            traffic.conversation = Conversation(("next",) * case.user_turns)
        conversation = traffic.conversation
        matcher = matcher_for(
            case.turns,
            case.rules.ignored,
            (lambda: conversation.current) if conversation is not None else None,
            exact=exact,
        )
        backend = ReplayBackend(matcher, case.mocks, traffic, case.rules, answers)
        handle = make_app(backend, traffic, CAPABILITY)
        responses = []
        for sent in case.sent:
            request = Request("POST", sent.path, "", sent.path, Headers(), sent.raw)
            response: Response = await handle(request)
            chunks = list(response.chunks) if response.chunks is not None else None
            responses.append((response.status, dict(response.headers), response.body, chunks))
        return Outcome(responses, traffic, matcher.unserved(), backend.served_exact)

    return asyncio.run(run())


def test_the_corpus_has_a_path_for_each_dialect_it_holds() -> None:
    for dialect, _, _ in committed_requests():
        found = dialect_for_path(PATHS[dialect])
        assert found is not None and found.name == dialect


@pytest.mark.parametrize("block", range(4))
def test_the_fast_path_and_the_slow_path_agree_on_every_request(block: int) -> None:
    served_exact = 0
    for seed in range(block * 100, block * 100 + 100):
        case = build_case(seed)
        fast, slow = replay(case, exact=True), replay(case, exact=False)
        assert slow.served_exact == 0
        served_exact += fast.served_exact
        assert fast.responses == slow.responses, seed
        assert fast.traffic.turns == slow.traffic.turns, seed
        for ours, theirs in zip(fast.traffic.turns, slow.traffic.turns, strict=True):
            assert ours.request_sha256 is None and theirs.request_sha256 is None
        assert fast.traffic.failures == slow.traffic.failures, seed
        assert (fast.traffic.divergence is None) == (slow.traffic.divergence is None), seed
        if fast.traffic.divergence is not None and slow.traffic.divergence is not None:
            assert fast.traffic.divergence.render() == slow.traffic.divergence.render(), seed
        assert fast.unserved == slow.unserved, seed
    # The comparison means something only if the fast path served many of them.
    assert served_exact > 40


def test_backends_that_share_what_the_fast_path_worked_out_answer_as_a_fresh_one() -> None:
    """The same turns replayed again and again, each time by a fresh backend handed the same
    `ExactAnswers` (as the bench's flows are): every replay answers as the slow path does,
    the later ones from what the first worked out."""
    served_exact = 0
    for seed in range(40):
        case = build_case(seed)
        slow = replay(case, exact=False)
        shared = ExactAnswers()
        first, again = (
            replay(case, exact=True, answers=shared),
            replay(case, exact=True, answers=shared),
        )
        for fast in (first, again):
            assert fast.responses == slow.responses, seed
            assert fast.traffic.turns == slow.traffic.turns, seed
            assert fast.unserved == slow.unserved, seed
        served_exact += again.served_exact
        for ours, theirs in zip(first.responses, again.responses, strict=True):
            assert ours == theirs
    assert served_exact > 10


def in_conversation(case: Case, user_turns: int) -> Case:
    """`case` as a conversation of `user_turns`, its turns tagged as record tags them."""
    conversation = Conversation(("next",) * user_turns)
    return replace(case, turns=[conversation.tag(t) for t in case.turns], user_turns=user_turns)


@pytest.mark.parametrize("block", range(2))
def test_the_fast_path_and_the_slow_path_agree_in_a_conversation(block: int) -> None:
    """Turn-scoped matching changes which turns a request may claim, never how: both paths ask
    the same user turn's matcher, and word a divergence or a shape change alike."""
    served_exact = tagged = 0
    for seed in range(block * 100, block * 100 + 100):
        case = in_conversation(build_case(seed), 1 + seed % 3)
        tagged += len({turn.conversation_turn for turn in case.turns}) > 1
        fast, slow = replay(case, exact=True), replay(case, exact=False)
        served_exact += fast.served_exact
        assert fast.responses == slow.responses, seed
        assert fast.traffic.turns == slow.traffic.turns, seed
        assert [t.conversation_turn for t in fast.traffic.turns] == [
            t.conversation_turn for t in slow.traffic.turns
        ]
        assert fast.traffic.failures == slow.traffic.failures, seed
        assert (fast.traffic.divergence is None) == (slow.traffic.divergence is None), seed
        if fast.traffic.divergence is not None and slow.traffic.divergence is not None:
            assert fast.traffic.divergence.render() == slow.traffic.divergence.render(), seed
        assert fast.unserved == slow.unserved, seed
    assert served_exact > 30 and tagged > 10, (served_exact, tagged)


def test_a_byte_identical_replay_is_served_wholly_by_its_bytes() -> None:
    case = Case()
    for dialect, request, response in committed_requests():
        sent = Sent(dialect, json.dumps(request, ensure_ascii=False).encode())
        case.turns.append(recorded_turn(sent, response, case.rules, case.mocks))
        case.sent.append(sent)
    fast, slow = replay(case, exact=True), replay(case, exact=False)
    assert fast.served_exact == len(case.turns)
    assert fast.responses == slow.responses and fast.traffic.turns == slow.traffic.turns
    # What the traffic keeps on a fast hit is the recorded request itself.
    assert [t.request for t in fast.traffic.turns] == [t.request for t in case.turns]


def test_non_ascii_text_written_as_escapes_keeps_the_fast_path_where_facts_are_sought() -> None:
    """Python's json writes `café` as `caf\\u00e9`: an escape that spells no character of a
    fact's spelling, so the request is still served by its bytes. One that spells an ASCII
    character (`\\u002F`, a slash) may spell a fact: that request is read."""
    rules = machine_rules(FACT)
    case = Case(rules=rules)
    for dialect, request, response in committed_requests():
        for text in NON_ASCII:
            sent = Sent(dialect, json.dumps({**request, "user": text}).encode())
            assert b"\\u" in sent.raw
            case.turns.append(recorded_turn(sent, response, rules, case.mocks))
            case.sent.append(sent)
    fast, slow = replay(case, exact=True), replay(case, exact=False)
    assert fast.served_exact == len(case.turns)
    assert fast.responses == slow.responses and fast.traffic.turns == slow.traffic.turns
    # The same bodies with every slash as `\\u002F`, recorded and replayed byte for byte.
    escaped = Case(rules=rules)
    for sent, turn in zip(case.sent, case.turns, strict=True):
        hidden = Sent(sent.dialect, sent.raw.replace(b"/", b"\\u002F"))
        escaped.turns.append(recorded_turn(hidden, turn.response, rules, case.mocks))
        escaped.sent.append(hidden)
    plain = sum(b"\\u002F" not in s.raw for s in escaped.sent)
    assert 0 < plain < len(escaped.sent)
    assert replay(escaped, exact=True).served_exact == plain


@pytest.mark.parametrize("slash", [b"\\/", b"\\u002F", b"\\u002f"])
def test_a_fact_the_bytes_spell_only_through_an_escape_is_read(slash: bytes) -> None:
    """Recorded where the path was no fact, replayed where it is the working directory: the
    bytes spell it only with its slashes escaped, so the same bytes are read, and normalised,
    and diverge from the recorded request as the slow path says."""
    dialect, request, response = committed_requests()[0]
    raw = json.dumps({**request, "metadata": {"cwd": FACT}}).encode()
    sent = Sent(dialect, raw.replace(b"/", slash))
    case = Case(rules=machine_rules(FACT), sent=[sent])
    case.turns = [recorded_turn(sent, response, RequestRules(), case.mocks)]
    fast, slow = replay(case, exact=True), replay(case, exact=False)
    assert fast.served_exact == 0
    assert slow.traffic.divergence is not None
    assert fast.responses == slow.responses


def test_an_earlier_unconsumed_turn_of_the_same_key_takes_the_slow_path() -> None:
    """Turn 1's bytes differ from turn 0's but say the same: a request of turn 1's bytes
    must claim turn 0 (earliest unconsumed), as the slow path does."""
    _, request, response = committed_requests()[0]
    compact = Sent("openai_chat", json.dumps(request, separators=(",", ":")).encode())
    spaced = Sent("openai_chat", json.dumps(request).encode())
    case = Case(sent=[spaced, compact])
    case.turns = [recorded_turn(s, response, case.rules, case.mocks) for s in (compact, spaced)]
    fast, slow = replay(case, exact=True), replay(case, exact=False)
    # The first request's bytes are turn 1's, but turn 0 comes first: read, it claims turn 0;
    # the second request's bytes are turn 0's, now consumed: read, it claims turn 1.
    assert fast.served_exact == 0
    assert fast.responses == slow.responses and fast.unserved == slow.unserved == []


def test_committed_traces_without_digests_replay_on_the_slow_path() -> None:
    for path in COMMITTED:
        trace = load_trace(path)
        digestless = [Turn(t.dialect, t.request, t.response) for t in trace.turns]
        matcher = TurnMatcher(digestless)
        assert all(matcher.claim(t.dialect, t.request) == i for i, t in enumerate(digestless))
        assert matcher.unserved() == []


def test_a_flow_with_mocks_or_an_escapable_fact_has_no_fast_path() -> None:
    env = Environment(
        ('/work/a"b',), ("/home/nobody",), ("/tmp/x-y",), "u", "h", *[date.today()] * 2
    )
    quoted = RequestRules(Normalizer.build([], env, ("cwd",)))
    assert not ReplayBackend(TurnMatcher([]), {}, Traffic(), quoted).gate.open
    mocked = {"t": ToolMock(("r",), repeat=True)}
    assert not ReplayBackend(TurnMatcher([]), mocked, Traffic()).gate.open
    assert ReplayBackend(TurnMatcher([]), {}, Traffic()).gate.open
    assert NO_NORMALIZER.spellings == ()


def test_the_committed_corpus_is_read(tmp_path: Path) -> None:
    assert any(p.name == "booking.trace.json" for p in COMMITTED)

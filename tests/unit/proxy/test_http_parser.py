"""The proxy's HTTP/1.1 request parser, sans-IO: wire bytes fed in pieces, requests or a
refusal out (RFC 9112). Every refusal names what was wrong; none lets a second reading of the
framing through."""

from __future__ import annotations

import random

import pytest

from flowproof.proxy import h1
from flowproof.proxy.h1 import (
    MAX_CHUNK_LINE_BYTES,
    MAX_HEAD_BYTES,
    MAX_TRAILER_BYTES,
    Request,
    RequestParser,
    ServerError,
)

POST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
CHUNKED = POST + b"Transfer-Encoding: chunked\r\n\r\n"


def requests(*pieces: bytes, max_body: int = 1000) -> list[Request]:
    """Every whole request the pieces make, fed one piece at a time."""
    parser = RequestParser(max_body)
    found = []
    for piece in pieces:
        parser.feed(piece)
        while (parsed := parser.next_request()) is not None:
            found.append(parsed[0])
    return found


def refusal(*pieces: bytes, max_body: int = 1000) -> tuple[int, str]:
    with pytest.raises(ServerError) as refused:
        requests(*pieces, max_body=max_body)
    return refused.value.status, str(refused.value)


def one_at_a_time(raw: bytes) -> list[bytes]:
    return [raw[i : i + 1] for i in range(len(raw))]


def test_content_length_and_transfer_encoding_together_are_refused() -> None:
    smuggling = (
        POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\nGET /v1/admin HTTP/1.1\r\n\r\n"
    )
    assert refusal(smuggling) == (
        400,
        "the request has both Content-Length and Transfer-Encoding; send one of them",
    )


@pytest.mark.parametrize(
    ("coding", "status", "why"),
    [
        ("xchunked", 400, "Transfer-Encoding 'xchunked' does not end in chunked"),
        ("chunked, gzip", 400, "Transfer-Encoding 'chunked, gzip' does not end in chunked"),
        ("chunkedx", 400, "Transfer-Encoding 'chunkedx' does not end in chunked"),
        ("chunked;q=1", 400, "Transfer-Encoding 'chunked;q=1' does not end in chunked"),
        ("chunked, chunked", 400, "Transfer-Encoding 'chunked, chunked' is chunked twice"),
        ("gzip, chunked", 501, "Transfer-Encoding 'gzip, chunked': only chunked alone is served"),
    ],
)
def test_only_chunked_is_a_transfer_coding(coding: str, status: int, why: str) -> None:
    raw = POST + f"Transfer-Encoding: {coding}\r\n\r\n0\r\n\r\n".encode()
    assert refusal(raw) == (status, why)


def test_chunked_is_a_case_insensitive_token() -> None:
    raw = POST + b"Transfer-Encoding:  ChUnKeD \r\n\r\n2\r\nok\r\n0\r\n\r\n"
    assert [request.body for request in requests(raw)] == [b"ok"]


def test_transfer_encoding_in_http_1_0_is_refused() -> None:
    raw = b"POST /v1/x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    assert refusal(raw) == (400, "Transfer-Encoding is not HTTP/1.0; send Content-Length")


@pytest.mark.parametrize("value", ["+83", "1_0", "0x10", "-1", "1 0", "", "²", "8e1"])
def test_content_length_is_digits_only(value: str) -> None:
    # "²" is a digit to str.isdigit(), and a byte (0xB2) a client can send.
    raw = POST + f"Content-Length: {value}\r\n\r\n".encode("latin-1") + b"x" * 100
    assert refusal(raw) == (400, f"Content-Length {value!r} is not a number of bytes")


@pytest.mark.parametrize(
    "fields", [b"Content-Length: 2, 3\r\n", b"Content-Length: 2\r\nContent-Length: 3\r\n"]
)
def test_differing_content_lengths_are_refused(fields: bytes) -> None:
    status, why = refusal(POST + fields + b"\r\nokk")
    assert (status, why) == (400, "Content-Length has differing values: '2, 3'")


def test_repeated_equal_content_lengths_are_one() -> None:
    raw = POST + b"Content-Length: 2\r\nContent-Length: 002\r\n\r\nok"
    assert refusal(raw)[0] == 400  # `2` and `002` are different field values
    assert [r.body for r in requests(POST + b"Content-Length: 2, 2\r\n\r\nok")] == [b"ok"]


def test_a_content_length_of_thousands_of_digits_is_over_the_limit_not_a_crash() -> None:
    raw = POST + b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n"
    assert refusal(raw) == (413, "the request body is over 1000 bytes")


@pytest.mark.parametrize("size", [b"0x2", b"+2", b"2_0", b" 2", b"2 ", b"-2", b"g", b""])
def test_a_chunk_size_is_hex_digits_only(size: bytes) -> None:
    raw = CHUNKED + size + b"\r\nok\r\n0\r\n\r\n"
    shown = repr(size.decode())
    assert refusal(raw) == (400, f"not a chunk-size line (hex digits only): {shown}")


def test_chunk_extensions_are_allowed() -> None:
    raw = CHUNKED + b'2;name=value\r\nok\r\n1 ; a = "q \\" ;" ; b\r\n!\r\n0;last\r\n\r\n'
    assert [request.body for request in requests(raw)] == [b"ok!"]


@pytest.mark.parametrize("split", [False, True])
def test_a_chunk_line_is_bounded(split: bool) -> None:
    line = b"2;" + b"e" * MAX_CHUNK_LINE_BYTES
    raw = CHUNKED + line
    pieces = (raw[:-100], raw[-100:]) if split else (raw + b"\r\nok\r\n0\r\n\r\n",)
    why = f"a chunk-size line is over {MAX_CHUNK_LINE_BYTES} bytes"
    assert refusal(*pieces) == (400, why)


def test_a_chunk_size_over_the_body_limit_is_refused() -> None:
    assert refusal(CHUNKED + b"f" * 40 + b"\r\n") == (413, "the request body is over 1000 bytes")
    assert refusal(CHUNKED + b"3e9\r\n") == (413, "the request body is over 1000 bytes")


@pytest.mark.parametrize(
    "body", [b"3\r\nabcX\r\n0\r\n\r\n", b"3\r\nabcd\r\n0\r\n\r\n", b"1\r\na\n1\r\nb\r\n0\r\n\r\n"]
)
def test_chunk_data_must_end_in_crlf(body: bytes) -> None:
    why = "chunk data is not followed by CRLF (the chunk size is wrong)"
    assert refusal(CHUNKED + body) == (400, why)


def test_a_missing_crlf_inside_a_run_of_alike_chunks_is_refused() -> None:
    # Runs of chunks framed alike are read in bulk: the bulk read checks every chunk's CRLF.
    run = b"1\r\na\r\n" * 50 + b"1\r\nbX\r\n" + b"1\r\nc\r\n" * 50 + b"0\r\n\r\n"
    why = "chunk data is not followed by CRLF (the chunk size is wrong)"
    assert refusal(CHUNKED + run) == (400, why)


@pytest.mark.parametrize("seed", range(6))
def test_a_chunked_body_reads_the_same_whole_or_a_byte_at_a_time(seed: int) -> None:
    chance = random.Random(seed)
    body = bytes(chance.randrange(256) for _ in range(3000))
    sizes = chance.choice([[1], [1, 2], [3, 3, 3, 7], [1, 1, 1, 1, 40]])
    wire, at = bytearray(), 0
    while at < len(body):
        size = min(sizes[(at // 7) % len(sizes)], len(body) - at)
        wire += b"%x\r\n%s\r\n" % (size, body[at : at + size])
        at += size
    raw = CHUNKED + wire + b"0\r\n\r\n"
    whole = requests(raw, max_body=10_000)
    dribbled = requests(*one_at_a_time(raw), max_body=10_000)
    assert [r.body for r in whole] == [r.body for r in dribbled] == [body]


@pytest.mark.parametrize("whole", [True, False])
def test_a_head_over_the_limit_is_431_however_it_arrives(whole: bool) -> None:
    """Whole: the blank line that ends it arrived too. In pieces: it has not (a client may
    never send it), and the head is refused once it is over the limit, not when it ends."""
    head = POST + b"X-Big: " + b"a" * MAX_HEAD_BYTES
    pieces = (head + b"\r\n\r\n",) if whole else _pieces(head, 1000)
    why = f"the request line and headers are over {MAX_HEAD_BYTES} bytes"
    assert refusal(*pieces) == (431, why)


def _pieces(raw: bytes, size: int) -> tuple[bytes, ...]:
    return tuple(raw[i : i + size] for i in range(0, len(raw), size))


def test_a_head_just_under_the_limit_is_read() -> None:
    filler = MAX_HEAD_BYTES - len(POST) - len(b"X-Big: \r\n\r\n")
    head = POST + b"X-Big: " + b"a" * filler + b"\r\n\r\n"
    assert len(head) == MAX_HEAD_BYTES
    assert len(requests(*(head[i : i + 999] for i in range(0, len(head), 999)))) == 1


def test_trailers_are_read_and_dropped() -> None:
    raw = CHUNKED + b"2\r\nok\r\n0\r\nX-Sum: 1\r\nX-Other: two\r\n\r\n"
    [request] = requests(*one_at_a_time(raw))
    assert request.body == b"ok" and "X-Sum" not in request.headers


@pytest.mark.parametrize("whole", [True, False])
def test_trailers_are_bounded(whole: bool) -> None:
    raw = CHUNKED + b"2\r\nok\r\n0\r\nX-T: " + b"t" * MAX_TRAILER_BYTES
    pieces = (raw + b"\r\n\r\n",) if whole else _pieces(raw, 500)
    why = f"the request trailer fields are over {MAX_TRAILER_BYTES} bytes"
    assert refusal(*pieces) == (431, why)


RULES = (
    "is not a `name: value` field "
    "(a token name, no space before the colon, no folding, no bare CR or LF)"
)


def test_a_malformed_trailer_is_refused() -> None:
    raw = CHUNKED + b"0\r\nX-Ok: 1\r\nnot a field\r\n\r\n"
    assert refusal(raw) == (400, f"trailer field line 2 {RULES}")


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (b"X-A: 1\nX-B: 2", " ('X-A')"),  # a bare LF is not a line end
        (b"X-A : 1", " ('X-A ')"),  # whitespace before the colon
        (b" folded", ""),  # obs-fold
        (b"X-A: a\rb", " ('X-A')"),  # a bare CR
        (b"X(A): 1", " ('X(A)')"),  # not a token
    ],
)
def test_a_header_line_outside_the_grammar_is_refused(line: bytes, named: str) -> None:
    raw = POST + line + b"\r\nContent-Length: 0\r\n\r\n"
    assert refusal(raw) == (400, f"header line 2{named} {RULES}")


def test_a_refused_header_line_is_named_never_shown() -> None:
    raw = POST + b"Authorization : Bearer sk-live-0123456789\r\nContent-Length: 0\r\n\r\n"
    assert refusal(raw) == (400, f"header line 2 ('Authorization ') {RULES}")


@pytest.mark.parametrize(
    ("line", "status", "why"),
    [
        (b"POST /v1/x HTTP/2.0", 505, "HTTP/2.0 is not served; use HTTP/1.1"),
        (b"POST /v1/x HTTP/1.1x", 400, "not an HTTP request line: 'POST /v1/x HTTP/1.1x'"),
        (b"POST /v1/x?key=sk-1 HTTP/1.1x", 400, "not an HTTP request line: 'POST /v1/x'"),
        (b"POST  /v1/x HTTP/1.1", 400, "not an HTTP request line: 'POST  /v1/x HTTP/1.1'"),
        (b"PO\x01ST /v1/x HTTP/1.1", 400, "not an HTTP request line: 'PO\\x01ST /v1/x HTTP/1.1'"),
    ],
)
def test_a_request_line_outside_the_grammar_is_refused(line: bytes, status: int, why: str) -> None:
    assert refusal(line + b"\r\n\r\n") == (status, why)


def test_pipelined_requests_and_a_leading_empty_line() -> None:
    first = POST + b"Content-Length: 1\r\n\r\n1"
    second = b"\r\n" + CHUNKED + b"1\r\n2\r\n0\r\n\r\n"
    assert [r.body for r in requests(first + second)] == [b"1", b"2"]
    assert [r.body for r in requests(*one_at_a_time(first + second))] == [b"1", b"2"]


def test_100_continue_is_wanted_once_while_the_body_is_missing() -> None:
    parser = RequestParser(1000)
    parser.feed(POST + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n")
    assert parser.next_request() is None
    assert parser.take_continue() and not parser.take_continue()
    parser.feed(b"ok")
    parsed = parser.next_request()
    assert parsed is not None and parsed[0].body == b"ok"


def test_a_refused_request_is_named_by_its_request_line() -> None:
    parser = RequestParser(1000)
    parser.feed(POST + b"X-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n")
    with pytest.raises(ServerError):
        parser.next_request()
    assert parser.request_line() == ("POST", "/v1/chat/completions")
    keyed = RequestParser(1000)  # a query may carry a key: a refusal names the path only
    keyed.feed(b"POST /v1/x%20y?key=sk-1 HTTP/1.1\r\nContent-Length: +1\r\n\r\n")
    with pytest.raises(ServerError):
        keyed.next_request()
    assert keyed.request_line() == ("POST", "/v1/x y")
    garbage = RequestParser(1000)
    garbage.feed(b"GARBAGE\r\n\r\n")
    with pytest.raises(ServerError):
        garbage.next_request()
    assert garbage.request_line() == ("?", "?")


def test_headers_read_from_the_wire_keep_their_names_and_join_repeated_ones() -> None:
    head = b"X-Beta: a \r\nx-beta:\tb\r\nAccept:json\r\nContent-Length: 2\r\n\r\n{}"
    [request] = requests(POST + head)
    assert request.headers["X-BETA"] == "a, b" and request.headers.get("accept") == "json"
    assert list(request.headers) == ["Host", "X-Beta", "Accept", "Content-Length"]
    assert request.body == b"{}"


def test_requests_in_one_read_and_requests_split_across_reads_read_alike() -> None:
    sent = b"".join(
        POST + b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in (b"1", b"22", b"")
    )
    whole = [request.body for request in requests(sent)]
    assert whole == [b"1", b"22", b""]
    for cut in range(1, len(sent)):
        assert [request.body for request in requests(sent[:cut], sent[cut:])] == whole
    assert all(type(body) is bytes for body in whole)


def test_a_body_split_across_reads_then_a_request_in_one_read() -> None:
    body = bytes(range(256)) * 40
    first = POST + b"Content-Length: %d\r\n\r\n" % len(body) + body
    second = POST + b"Content-Length: 2\r\n\r\nok"
    parser = RequestParser(100_000)
    parser.feed(first[:100])
    assert parser.next_request() is None
    parser.feed(first[100:5000])
    assert parser.next_request() is None
    parser.feed(first[5000:] + second)
    got = parser.next_request()
    assert got is not None and got[0].body == body
    got = parser.next_request()
    assert got is not None and got[0].body == b"ok" and not parser.pending
    parser.feed(second)
    got = parser.next_request()
    assert got is not None and got[0].body == b"ok" and not parser.pending


def test_a_path_is_percent_decoded_and_its_target_kept_as_sent() -> None:
    [escaped, plain] = requests(
        b"POST /v1/a%20b?x=%20 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
        b"POST /v1/ab?x=1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
    )
    assert (escaped.path, escaped.query_string, escaped.path_qs) == (
        "/v1/a b",
        "x=%20",
        "/v1/a%20b?x=%20",
    )
    assert (plain.path, plain.query_string, plain.path_qs) == ("/v1/ab", "x=1", "/v1/ab?x=1")


# --- the one-pass fast case for whole requests, held to the strict stages ----------------------

_METHODS = (b"POST", b"GET", b"HEAD", b"P@ST", b"")
_TARGETS = (
    b"/v1/chat/completions",
    b"/v1/messages?beta=true",
    b"/v1/a%20b",
    b"/v1/x?q=%41",
    b"http://h/v1/x",
    b"/",
    b"*",
    b"/a b",
)
_VERSIONS = (b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"http/1.1", b"HTTP/1.1 ")
_FIELDS = (
    b"Host: 127.0.0.1",
    b"Content-Type: application/json",
    b"Connection: close",
    b"Connection: Keep-Alive",
    b"connection: CLOSE, upgrade",
    b"Transfer-Encoding: chunked",
    b"Expect: 100-continue",
    b"Expect: nothing",
    b"X-Beta: a \t",
    b"x-beta:b",
    b"X-Obs: caf\xe9",
    b"Bad Name: x",
    b"X-Ctl: a\x01b",
    b" folded: x",
    b"X-Empty:",
    b"Upgrade: websocket",
)
_LENGTHS = (b"%d", b" %d", b"%d ", b"0%d", b"+%d", b"%d, %d", b"%d,%d", b"x", b"")


def _random_request(chance: random.Random) -> bytes:
    """A request near the shape model clients send, with one or more ways to leave it."""
    body = bytes(chance.randrange(256) for _ in range(chance.choice((0, 1, 5, 40))))
    fields = chance.sample(_FIELDS[: 4 if chance.random() < 0.5 else None], chance.randrange(4))
    if chance.random() < 0.85:
        spelling = chance.choice(_LENGTHS) if chance.random() < 0.3 else b"%d"
        said = len(body) + (chance.choice((-1, 1, 1000)) if chance.random() < 0.2 else 0)
        value = spelling.replace(b"%d", b"%d" % said)
        fields.insert(chance.randrange(len(fields) + 1), b"Content-Length: " + value)
    if chance.random() < 0.1 and fields:
        fields.append(chance.choice(fields))  # a field sent twice
    line = b" ".join(
        (
            chance.choice(_METHODS) if chance.random() < 0.2 else b"POST",
            chance.choice(_TARGETS) if chance.random() < 0.3 else _TARGETS[0],
            chance.choice(_VERSIONS) if chance.random() < 0.2 else b"HTTP/1.1",
        )
    )
    lead = b"\r\n" if chance.random() < 0.05 else b""
    return lead + b"\r\n".join((line, *fields)) + b"\r\n\r\n" + body


def _read_all(pieces: list[bytes], max_body: int, *, fast: bool = True) -> list[object]:
    """What a parser makes of the pieces, fed in turn: each request (with its headers as
    sent and whether the connection stays open), then the refusal that ended it or whether
    bytes are left unread."""
    parser = RequestParser(max_body, fast=fast)
    found: list[object] = []
    try:
        for piece in pieces:
            parser.feed(piece)
            while (parsed := parser.next_request()) is not None:
                request, keep_alive = parsed
                found.append((request, list(request.headers.items()), keep_alive))
    except ServerError as refused:
        found.append((refused.status, str(refused)))  # (the connection is closed: no more)
    else:
        found.append(parser.pending)
    return found


def _read_in_one_pass(sent: bytes, max_body: int) -> bool:
    """Whether the parser's fast case reads the first request of `sent`, arrived whole."""
    parser = RequestParser(max_body)
    parser.feed(sent)
    return parser._read_whole() is not None


@pytest.mark.parametrize("block", range(4))
def test_the_fast_case_reads_a_request_as_the_strict_stages_read_it(block: int) -> None:
    """Fed whole, requests go through the one-pass fast case where it can read them; with the
    fast case off, or fed a byte at a time (each read after the first is appended to what is
    kept), never. All three must give the same requests, the same refusal and leave the same
    bytes unread."""
    taken = 0
    for seed in range(block * 500, block * 500 + 500):
        chance = random.Random(seed)
        sent = b"".join(_random_request(chance) for _ in range(chance.choice((1, 1, 2))))
        max_body = chance.choice((1000, 10))
        fast = _read_all([sent], max_body)
        assert fast == _read_all([sent], max_body, fast=False), (seed, sent)
        assert fast == _read_all(one_at_a_time(sent), max_body), (seed, sent)
        taken += _read_in_one_pass(sent, max_body)
    assert taken > 100  # the fast case reads many of them, and the stages the rest


_NAMES = ("content-length", "Content-Length", "CONNECTION", "x-length", "Upgrade", "a")
_VALUES = ("5", " 5 ", "\t7", "", "Ünïcode ÀÉ", "a:b", "close, Upgrade", " \t ")


@pytest.mark.parametrize("block", range(2))
def test_a_header_looked_up_before_indexing_reads_as_the_index_reads_it(block: int) -> None:
    """`lowered` searches the fields until something indexes them; the two must agree on every
    name, sent once, twice or not at all, in any case, with any value (obs-text included)."""
    for seed in range(block * 500, block * 500 + 500):
        chance = random.Random(seed)
        lines = [
            f"{chance.choice(_NAMES)}:{chance.choice(_VALUES)}"
            for _ in range(chance.randrange(1, 6))
        ]
        fields = "\r\n".join(lines)
        for name in {name.lower() for name in _NAMES} | {"length"}:
            searched = h1.Headers.of_fields(fields).lowered(name)
            indexed = h1.Headers.of_fields(fields)
            assert indexed.get(name) == indexed.lowered(name) == searched, (seed, fields, name)

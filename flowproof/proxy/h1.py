"""HTTP/1.1 requests from bytes, with no IO: the proxy's request parser (RFC 9112).

`RequestParser` takes bytes as they arrive and gives back whole requests, so it is tested by
feeding it bytes; the server around it (proxy/http.py) only moves bytes. Whatever framing a
request leaves open to two readings is refused before any handler sees it, and the connection is
closed: `Content-Length` together with `Transfer-Encoding` (the classic request-smuggling
shape), a transfer coding other than a final `chunked`, a `Content-Length` that is not plain
digits or is sent twice with different values, a chunk size that is not plain hex, chunk data
not followed by CRLF. The head (431), a chunk-size line and the trailers are bounded, and every
byte is looked at a bounded number of times, so a body of many tiny chunks costs time in
proportion to its length, not to its square.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar, overload
from urllib.parse import unquote

_T = TypeVar("_T")

MAX_HEAD_BYTES = 64 * 1024
"""A request line and headers longer than this are refused (431): no model client sends that."""
MAX_CHUNK_LINE_BYTES = 4 * 1024
"""A chunk-size line (the size and its extensions) longer than this is refused (400)."""
MAX_TRAILER_BYTES = 8 * 1024
"""Trailer fields after the last chunk longer than this are refused (431); they are read and
dropped, since a model call carries nothing in them."""


class Headers(Mapping[str, str]):
    """Request headers: looked up case-insensitively, iterated under the names the client
    used. A header sent more than once reads as its values joined by `, ` (RFC 9110 §5.3).

    Headers read from a request (`of_fields`) are indexed the first time anything but
    `lowered` asks for them. The parser and the replay lane look up four or five names of a
    request that carries fifteen or more (an SDK's own headers), and a search of the fields
    for each of those costs less than indexing them all."""

    __slots__ = ("_by_lower", "_fields", "_folded")

    def __init__(self, pairs: Sequence[tuple[str, str]] = ()) -> None:
        self._fields = self._folded = ""
        self._by_lower: dict[str, tuple[str, str]] | None = {}
        for name, value in pairs:
            lower = name.lower()
            if lower in self._by_lower:
                first, values = self._by_lower[lower]
                self._by_lower[lower] = (first, f"{values}, {value}")
            else:
                self._by_lower[lower] = (name, value)

    @classmethod
    def of_fields(cls, fields: str) -> Headers:
        """The headers of checked field lines (`name: value` joined by CRLF, a token before
        each colon, latin-1 text)."""
        headers = cls.__new__(cls)
        headers._by_lower = None
        headers._fields = fields
        # Lowering latin-1 text keeps its length, so an offset in one is an offset in the other.
        headers._folded = "\r\n" + fields.lower() + "\r\n"
        return headers

    def _index(self) -> dict[str, tuple[str, str]]:
        if self._by_lower is None:
            by_lower: dict[str, tuple[str, str]] = {}
            lines = self._fields.split("\r\n")
            for line in lines:
                name, _, value = line.partition(":")
                by_lower[name.lower()] = (name, value.strip(" \t"))
            if len(by_lower) < len(lines):  # a header sent more than once: its values joined
                pairs = [(name, value.strip(" \t")) for name, _, value in map(_colon, lines)]
                by_lower = Headers(pairs)._index()
            self._by_lower = by_lower
        return self._by_lower

    def __getitem__(self, name: str) -> str:
        return self._index()[name.lower()][1]

    @overload
    def get(self, name: str, /) -> str | None: ...
    @overload
    def get(self, name: str, /, default: str | _T) -> str | _T: ...
    def get(self, name: str, /, default: object = None) -> object:
        # Mapping.get goes through a KeyError for every header a request does not send, and
        # the parser asks for several on every request.
        found = self._index().get(name.lower())
        return default if found is None else found[1]

    def lowered(self, name: str) -> str | None:
        """The value of header `name`, a field name given in lower case (what the parser and
        the replay lane ask, on every request, without lowering it or indexing the rest)."""
        if self._by_lower is None:
            folded, wanted = self._folded, "\r\n" + name + ":"
            at = folded.find(wanted)
            if at < 0:
                return None
            start = at + len(wanted)
            end = folded.find("\r\n", start)
            if folded.find(wanted, end) < 0:  # sent once (more: the index joins the values)
                return self._fields[start - 2 : end - 2].strip(" \t")
        found = self._index().get(name)
        return None if found is None else found[1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._index()

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._index().values())

    def __len__(self) -> int:
        return len(self._index())


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    """Percent-decoded, without the query."""
    query_string: str
    path_qs: str
    """The target as the client sent it: `/v1/messages?beta=true`."""
    headers: Headers
    body: bytes


class ServerError(Exception):
    """A request this server refuses before any handler sees it."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


# RFC 9110 §5.6.2: the characters of a token (a method, a field name, a transfer coding).
_TOKEN = rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([^\x00-\x20\x7f]+) (HTTP/[0-9]\.[0-9])")
# A field value may hold visible characters, spaces, tabs and obs-text, never a control.
_FIELD = _TOKEN + rb":[^\x00-\x08\x0a-\x1f\x7f]*"
_FIELD_LINE = re.compile(_FIELD)
_FIELD_SECTION = re.compile(_FIELD + rb"(?:\r\n" + _FIELD + rb")*")
_FIELD_RULES = " (a token name, no space before the colon, no folding, no bare CR or LF)"
_COMMON_HEAD = re.compile(
    rb"(" + _TOKEN + rb") (/[^\x00-\x20\x7f%]*) HTTP/1\.1\r\n"
    rb"(" + _FIELD + rb"(?:\r\n" + _FIELD + rb")*)"
)
"""The head `RequestParser._read_whole` reads: HTTP/1.1, an origin-form target with nothing
percent-encoded, at least one field, every line in the grammar `_parse_head` checks."""
_QUOTED = rb'"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[\t -~\x80-\xff])*"'
_CHUNK_EXTENSION = (
    rb"[ \t]*;[ \t]*" + _TOKEN + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?"
)
# RFC 9112 §7.1: a chunk size is hex digits only (no sign, no `0x`, no `_`), then extensions.
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]+)(?:" + _CHUNK_EXTENSION + rb")*\r\n")
_MAX_SIZE_DIGITS = 15
"""Hex digits of a chunk size past its leading zeros: more is over any body limit (413)."""
_BY_COLUMN = 16
"""Chunks of up to this many bytes are handled a column (the n-th byte of each) at a time."""


class _Stage(Enum):
    HEAD = "head"
    LENGTH = "length"
    CHUNK_LINE = "chunk line"
    CHUNK_DATA = "chunk data"
    TRAILERS = "trailers"


@dataclass(frozen=True, slots=True)
class _Head:
    method: str
    target: str
    version: str
    headers: Headers


class RequestParser:
    """HTTP/1.1 requests (RFC 9112) from the bytes of one connection, with no IO: `feed` what
    arrives, then `next_request` until it says None (more bytes needed). A `ServerError` means
    the connection must be answered with its status and closed.

    A request is read in stages (head, then a Content-Length body or chunks, then trailers),
    each resumed where the last read left off. Its fast case is a request that arrives whole in
    one read, framed the common way: read in one pass (`_read_whole`), as the stages read it.

    Bytes are kept from where the request in progress continues (`_at`), and dropped once read,
    so each byte is looked at a bounded number of times however the request is split."""

    def __init__(self, max_body: int, *, fast: bool = True) -> None:
        self._max_body = max_body
        self._fast = fast
        """Whether a request that arrives whole, framed as model clients frame it, is read in
        one pass (`_read_whole`); False reads every request by the stages alone, the strict
        rules the fast case is tested against (tests/unit/proxy/test_http_parser.py)."""
        self._buffer: bytes | bytearray = b""
        """Bytes not read yet: those of one read as they came (most requests arrive whole in
        one), a bytearray once a request spans reads."""
        self._at = 0
        """Where the request in progress continues in `_buffer`."""
        self._searched = 0
        """No blank line ends the head (or the trailers) in `_buffer` before this."""
        self._stage = _Stage.HEAD
        self._head: _Head | None = None
        self._remaining = 0
        """Body bytes (LENGTH) or bytes of the current chunk (CHUNK_DATA) still to come."""
        self._body = bytearray()
        self._last_line = b""
        """The last chunk-size line read (two alike in a row may start a run)."""
        self._continue = False
        """The head asked for `100 Continue` and it has not been taken yet."""

    def feed(self, data: bytes) -> None:
        if not self._buffer:
            self._buffer = bytes(data)  # (no copy of what asyncio hands over)
        elif isinstance(self._buffer, bytes):
            self._buffer = bytearray(self._buffer)
            self._buffer += data
        else:
            self._buffer += data

    @property
    def pending(self) -> bool:
        """Bytes have arrived that no request returned so far has used."""
        return len(self._buffer) > self._at

    def take_continue(self) -> bool:
        """True once per request whose head asked for `100 Continue` while its body is not
        all here: the client waits for it before it sends the body."""
        wanted, self._continue = self._continue, False
        return wanted

    def request_line(self) -> tuple[str, str]:
        """Method and path (without the query, which may carry a key) of the request in
        progress, "?" for what could not be read: what names a refused request."""
        if self._head is not None:
            return self._head.method, _path(self._head.target)
        line = bytes(self._buffer[self._at : self._at + MAX_HEAD_BYTES]).split(b"\r\n", 1)[0]
        matched = _REQUEST_LINE.fullmatch(line)
        if matched is None:
            return "?", "?"
        return matched[1].decode("latin-1"), _path(matched[2].decode("latin-1"))

    def next_request(self) -> tuple[Request, bool] | None:
        """The next whole request and whether the connection stays open after it; None while
        it is still arriving."""
        if self._stage is _Stage.HEAD and self._fast:
            whole = self._read_whole()
            if whole is not None:
                return whole
        try:
            return self._advance()
        finally:
            self._drop_read_bytes()

    def _read_whole(self) -> tuple[Request, bool] | None:
        """The fast case: the request at the start of a read that came whole (`_buffer` as
        asyncio handed it over), when all of it is there and it is framed the way model
        clients frame nearly every call: HTTP/1.1, an origin-form target with nothing
        percent-encoded, a Content-Length (or no body), no Transfer-Encoding. None for
        anything else, which the stages then read and, if they must, refuse, saying why.

        One expression checks the head against the grammar the stages check it against, so
        whatever this reads, it reads as they would; a replayed model call arrives whole in
        one read, and this one pass costs about half of the stages. A request that spans reads
        is never looked at here (the buffer is a bytearray by then), so a head sent a byte at
        a time is still searched once. (`Expect: 100-continue` needs no answer once the body
        is here.)"""
        buffer = self._buffer
        if self._at or not isinstance(buffer, bytes):
            return None
        end = buffer.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES - 3)
        if end < 0:
            return None
        matched = _COMMON_HEAD.fullmatch(buffer, 0, end)
        if matched is None:
            return None
        headers = Headers.of_fields(matched[3].decode("latin-1"))
        try:
            length = _framing(headers, "HTTP/1.1")
        except ServerError:
            return None  # (the stages refuse it, saying why)
        if length is None:
            return None  # chunked
        stop = end + 4 + length
        if length > self._max_body or stop > len(buffer):
            return None
        method, target = matched[1].decode("latin-1"), matched[2].decode("latin-1")
        request = _request(method, target, headers, buffer[end + 4 : stop])
        self._buffer = buffer[stop:] if stop < len(buffer) else b""
        self._searched = 0
        return request, _keeps_alive(headers, "HTTP/1.1")

    def _advance(self) -> tuple[Request, bool] | None:
        if self._stage is _Stage.HEAD and not self._read_head():
            return None
        if self._stage is _Stage.LENGTH:
            if len(self._buffer) - self._at < self._remaining:
                return None
            end = self._at + self._remaining
            body = _bytes(self._buffer, self._at, end)
            self._at = end
            return self._finish(body)
        if not self._read_chunks():
            return None
        return self._finish(bytes(self._body))

    def _finish(self, body: bytes) -> tuple[Request, bool]:
        head = self._head
        assert head is not None
        request = _request(head.method, head.target, head.headers, body)
        keep_alive = _keeps_alive(head.headers, head.version)
        self._head, self._stage, self._body, self._continue = None, _Stage.HEAD, bytearray(), False
        self._last_line = b""
        return request, keep_alive

    def _drop_read_bytes(self) -> None:
        if not self._at:
            return
        if self._at >= len(self._buffer):
            self._buffer = b""
        elif isinstance(self._buffer, bytearray):
            del self._buffer[: self._at]  # (in place: a bytearray drops its front cheaply)
        else:
            self._buffer = bytearray(memoryview(self._buffer)[self._at :])
        self._searched = max(0, self._searched - self._at)
        self._at = 0

    def _blank_line(self, limit: int, status: int, what: str) -> int | None:
        """Where the blank line that ends a field section (the head, the trailers) starts;
        None while it has not arrived. A section over `limit` bytes is refused, whether it
        came in one read or in many."""
        # The search resumes where the last one ended (less the 3 bytes a CRLFCRLF split
        # across reads may have left), so a head sent a byte at a time is still read once.
        end = self._buffer.find(b"\r\n\r\n", max(self._at, self._searched - 3))
        if end < 0:
            self._searched = len(self._buffer)
            if len(self._buffer) - self._at > limit:
                raise ServerError(status, f"the request {what} are over {limit} bytes")
            return None
        if end + 4 - self._at > limit:
            raise ServerError(status, f"the request {what} are over {limit} bytes")
        return end

    def _read_head(self) -> bool:
        # RFC 9112 §2.2: empty lines before a request line are ignored (some clients end a
        # body with an extra CRLF).
        while self._buffer.startswith(b"\r\n", self._at):
            self._at += 2
        end = self._blank_line(MAX_HEAD_BYTES, 431, "line and headers")
        if end is None:
            return False
        head = _parse_head(_bytes(self._buffer, self._at, end))
        self._head = head
        self._at = end + 4
        self._searched = self._at
        length = _framing(head.headers, head.version)
        if length is None:
            self._stage = _Stage.CHUNK_LINE
        elif length > self._max_body:
            raise ServerError(413, f"the request body is over {self._max_body} bytes")
        else:
            self._stage, self._remaining = _Stage.LENGTH, length
        self._continue = (head.headers.lowered("expect") or "").lower() == "100-continue"
        return True

    def _read_chunks(self) -> bool:
        """Read chunks as far as they have arrived; True once the trailers are read too."""
        while True:
            if self._stage is _Stage.CHUNK_LINE and not self._read_chunk_line():
                return False
            if self._stage is _Stage.CHUNK_DATA and not self._read_chunk_data():
                return False
            if self._stage is _Stage.TRAILERS:
                return self._read_trailers()

    def _read_chunk_line(self) -> bool:
        start = self._at
        matched = _CHUNK_LINE.match(self._buffer, start, start + MAX_CHUNK_LINE_BYTES + 2)
        if matched is None:
            return self._refuse_chunk_line(start)
        self._at = matched.end()
        size = _chunk_size(matched[1])
        if size == 0:
            self._stage = _Stage.TRAILERS
            return True
        self._check_body_room(size)
        line = matched[0][:-2]
        if line == self._last_line:  # two alike in a row: maybe a run, read it all at once
            count = _alike_chunks(self._buffer, start, line, size)
            if count > 1:
                self._check_body_room(count * size)
                self._body += _run_data(self._buffer, start, len(line) + 2, size, count)
                self._at = start + count * (len(line) + size + 4)
                return True
        self._last_line = line
        self._stage, self._remaining = _Stage.CHUNK_DATA, size
        return True

    def _refuse_chunk_line(self, start: int) -> bool:
        """No chunk-size line at `start`: refused if it has ended (or is over the limit);
        False while it may still be arriving."""
        line_end = self._buffer.find(b"\r\n", start, start + MAX_CHUNK_LINE_BYTES + 2)
        if line_end >= 0:
            line = bytes(self._buffer[start:line_end])
            raise ServerError(400, f"not a chunk-size line (hex digits only): {_shown(line)}")
        if len(self._buffer) - start > MAX_CHUNK_LINE_BYTES:
            raise ServerError(400, f"a chunk-size line is over {MAX_CHUNK_LINE_BYTES} bytes")
        return False

    def _read_chunk_data(self) -> bool:
        end = self._at + self._remaining
        if len(self._buffer) < end + 2:
            return False
        if self._buffer[end : end + 2] != b"\r\n":
            raise ServerError(400, "chunk data is not followed by CRLF (the chunk size is wrong)")
        self._body += self._buffer[self._at : end]
        self._at = end + 2
        self._stage = _Stage.CHUNK_LINE
        return True

    def _read_trailers(self) -> bool:
        """Trailer fields up to the blank line: checked as fields, bounded, then dropped."""
        if self._buffer.startswith(b"\r\n", self._at):
            self._at += 2
            return True
        end = self._blank_line(MAX_TRAILER_BYTES, 431, "trailer fields")
        if end is None:
            return False
        _check_fields(_bytes(self._buffer, self._at, end), "trailer field")
        self._at = end + 4
        return True

    def _check_body_room(self, size: int) -> None:
        if len(self._body) + size > self._max_body:
            raise ServerError(413, f"the request body is over {self._max_body} bytes")


def _colon(line: str) -> tuple[str, str, str]:
    return line.partition(":")


def _bytes(buffer: bytes | bytearray, start: int, end: int) -> bytes:
    """`buffer[start:end]` as bytes, copied once."""
    if isinstance(buffer, bytes):
        return buffer[start:end]
    with memoryview(buffer) as view:
        return view[start:end].tobytes()


def _parse_head(head: bytes) -> _Head:
    """The request line and header fields, checked against RFC 9112's grammar: a bare CR or
    LF, a space before a colon or a folded line is refused, never guessed at."""
    request_line, _, fields = head.partition(b"\r\n")
    matched = _REQUEST_LINE.fullmatch(request_line)
    if matched is None:
        # Without its query, which may carry a key.
        raise ServerError(400, f"not an HTTP request line: {_shown(request_line.split(b'?')[0])}")
    # The line matched: three parts, one space between each, none inside the target.
    method, target, version = request_line.decode("latin-1").split(" ")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise ServerError(505, f"{version} is not served; use HTTP/1.1")
    if not fields:
        return _Head(method, target, version, Headers())
    _check_fields(fields, "header")
    return _Head(method, target, version, Headers.of_fields(fields.decode("latin-1")))


def _check_fields(fields: bytes, kind: str) -> None:
    """Every CRLF-separated line of `fields` a field line: one pass in C, then, only for a
    refusal, the first line that is not, named by its field name and never its value (which
    may be a key)."""
    if _FIELD_SECTION.fullmatch(fields) is not None:
        return
    for number, line in enumerate(fields.split(b"\r\n"), 1):
        if _FIELD_LINE.fullmatch(line) is None:
            name, colon, _ = line.partition(b":")
            which = (
                f"{kind} line {number} ({_shown(name[:40])})" if colon else f"{kind} line {number}"
            )
            raise ServerError(400, f"{which} is not a `name: value` field{_FIELD_RULES}")


def _framing(headers: Headers, version: str) -> int | None:
    """The body's length from `Content-Length`, or None for a chunked body (RFC 9112 §6).
    Anything a second reader could frame differently is refused."""
    transfer_encoding = headers.lowered("transfer-encoding")
    content_length = headers.lowered("content-length")
    if transfer_encoding is not None and content_length is not None:
        raise ServerError(
            400, "the request has both Content-Length and Transfer-Encoding; send one of them"
        )
    if transfer_encoding is not None:
        _check_chunked(transfer_encoding, version)
        return None
    if content_length is None:
        return 0
    return _content_length(content_length)


def _check_chunked(transfer_encoding: str, version: str) -> None:
    if version == "HTTP/1.0":  # RFC 9112 §6.1: its framing is faulty, whatever it says
        raise ServerError(400, "Transfer-Encoding is not HTTP/1.0; send Content-Length")
    codings = [coding.strip(" \t").lower() for coding in transfer_encoding.split(",")]
    if codings[-1] != "chunked":
        raise ServerError(400, f"Transfer-Encoding {transfer_encoding!r} does not end in chunked")
    if codings.count("chunked") > 1:
        raise ServerError(400, f"Transfer-Encoding {transfer_encoding!r} is chunked twice")
    if len(codings) > 1:
        raise ServerError(
            501, f"Transfer-Encoding {transfer_encoding!r}: only chunked alone is served"
        )


def _content_length(value: str) -> int:
    """Digits only (no sign, no `_`, no spaces inside); a list of equal values is one value,
    differing values are refused (RFC 9112 §6.3)."""
    if value.isascii() and value.isdigit() and len(value) <= 18:  # what every client sends
        return int(value)
    values = {item.strip(" \t") for item in value.split(",")}
    if len(values) > 1:
        raise ServerError(400, f"Content-Length has differing values: {value!r}")
    (digits,) = values
    if not digits.isascii() or not digits.isdigit():
        raise ServerError(400, f"Content-Length {value!r} is not a number of bytes")
    # int() of a very long digit string is slow and, past 4300 digits, refused by Python;
    # a number that long is over any body limit anyway.
    significant = digits.lstrip("0") or "0"
    return int(significant) if len(significant) <= 18 else 10**18


def _chunk_size(digits: bytes) -> int:
    significant = digits.lstrip(b"0") or b"0"
    return int(significant, 16) if len(significant) <= _MAX_SIZE_DIGITS else 16**_MAX_SIZE_DIGITS


def _alike_chunks(buffer: bytes | bytearray, start: int, line: bytes, size: int) -> int:
    """How many whole chunks from `start` on are framed exactly alike: the same size line, then
    `size` bytes and CRLF. A client that writes its body in equal pieces sends such runs, and
    so does one that sends a byte per chunk; reading them a chunk at a time costs Python-level
    work per chunk, so a run is checked column by column (every chunk's n-th framing byte at
    once, in C), over windows that double and never overlap: a run costs time in proportion
    to its length, and a run of one costs only the glance at the next chunk's size line."""
    stride = len(line) + size + 4
    available = (len(buffer) - start) // stride
    next_line = start + stride
    if available < 2 or buffer[next_line : next_line + len(line) + 2] != line + b"\r\n":
        return 1
    framing = [*enumerate(line + b"\r\n"), (len(line) + 2 + size, 13), (len(line) + 3 + size, 10)]
    count, window = 0, 4
    while count < available:
        window = min(window, available - count)
        at = start + count * stride
        if size <= _BY_COLUMN and _all_alike(buffer, at, line, size, window):
            alike = window
        else:
            alike = _alike_in(buffer, at, stride, framing, window)
        count += alike
        if alike < window:
            break
        window *= 2
    return count


def _all_alike(buffer: bytes | bytearray, start: int, line: bytes, size: int, window: int) -> bool:
    """Whether all `window` chunks from `start` are framed alike: their data blanked out (a
    column at a time), they must equal the framing repeated, one comparison in C."""
    stride = len(line) + size + 4
    framed = buffer[start : start + window * stride]
    if isinstance(framed, bytes):
        framed = bytearray(framed)
    blank = bytes(window)
    for column in range(size):
        framed[len(line) + 2 + column :: stride] = blank
    return framed == (line + b"\r\n" + bytes(size) + b"\r\n") * window


def _alike_in(
    buffer: bytes | bytearray, start: int, stride: int, framing: list[tuple[int, int]], window: int
) -> int:
    """How many of the `window` chunks from `start` have every framing byte in its place."""
    alike = window
    for offset, byte in framing:
        column = buffer[start + offset : start + window * stride : stride]
        expected = bytes((byte,))
        if column != expected * window:  # a plain comparison: the common case
            alike = min(alike, len(column) - len(column.lstrip(expected)))
    return alike


def _run_data(buffer: bytes | bytearray, start: int, offset: int, size: int, count: int) -> bytes:
    """The data of `count` chunks framed alike from `start`, each `offset` bytes into it."""
    stride = offset + size + 2
    stop = start + count * stride
    if size > _BY_COLUMN:  # few chunks for their bytes: a slice each is cheap enough
        return b"".join([buffer[at : at + size] for at in range(start + offset, stop, stride)])
    data = bytearray(count * size)
    for column in range(size):
        data[column::size] = buffer[start + offset + column : stop : stride]
    return bytes(data)


def _keeps_alive(headers: Headers, version: str) -> bool:
    """Whether the connection stays open after a request with these headers (RFC 9112 §9.3)."""
    connection = (headers.lowered("connection") or "").lower()
    return "close" not in connection and (version != "HTTP/1.0" or "keep-alive" in connection)


def _request(method: str, sent_target: str, headers: Headers, body: bytes) -> Request:
    target = _origin_form(sent_target)
    raw_path, _, query = target.partition("?")
    path = unquote(raw_path) if "%" in raw_path else raw_path
    return Request(method, path, query, target, headers, body)


def _origin_form(target: str) -> str:
    """`/v1/messages?beta=true`, also when a client sent `http://host/v1/messages?beta=true`."""
    if target.startswith(("http://", "https://")):
        return "/" + target.split("/", 3)[3] if target.count("/") >= 3 else "/"
    return target


def _path(target: str) -> str:
    """The percent-decoded path of a request target, without the query (which may carry a
    key): what names a refused request."""
    return unquote(_origin_form(target).partition("?")[0])


def _shown(line: bytes) -> str:
    """A line as an error names it: the first 80 characters, quoted."""
    return repr(line[:80].decode("latin-1"))

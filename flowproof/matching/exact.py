"""Byte-exact replay: serving a request whose bytes are the bytes recorded, without reading them.

At record, each model turn keeps the SHA-256 of what the agent sent (`request_digest`: the
dialect, the path and query the route read, the raw body). At replay, a request whose digest
is a recorded turn's is served that turn without parsing, mock substitution, normalisation or
serialising a key, but only when the slow path (matching/match.py over the parsed request)
would provably claim the same turn and write the same traffic entry:

- normalising the parsed request provably changes nothing (`FastGate`): the normaliser has
  no current spelling to replace; or the bytes hold none of them, no `\\/` and no `\\u`
  escape of an ASCII character, and no spelling holds a character JSON must escape, so every
  spelling that occurs in a string of the parse occurs in the bytes as itself. The recorded
  request holds no placeholder (`holds_placeholder`), so normalising it at record changed
  nothing either. Equal bytes then mean an equal matched request.
- the flow mocks no tool the model sees (`FastGate`): a substitution would change the
  request, and proving it would not takes the parse this path exists to skip. Record keeps a
  digest only when its own substitution changed nothing (proxy/forward.py), so a trace whose
  requests record rewrote never offers one.
- the turn is the earliest unconsumed one with the request's key (matching/match.py checks).

Whatever fails a condition goes to the slow path, unchanged; the verdict is the same either way.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowproof.trace.model import Turn

DIGEST_FIELD = "request_sha256"
"""The model turn's field in a trace (trace format 5)."""
PLACEHOLDER_MARK = "{{flowproof."
"""What every normalisation placeholder starts with (matching/normalize.py `placeholder`)."""

_HEX_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_ASCII_ESCAPE = re.compile(rb"\\u00[0-7]")
"""A `\\u` escape of an ASCII character. With `\\/` (sought with the spellings, `_searches`),
the only escape that can spell a character of a plain spelling (`_plain`): any other `\\u`
spells a character no spelling holds, as the other short escapes do, so a body whose non-ASCII
text an SDK wrote as `\\u00e9` keeps the fast path. (A compiled search for its literal
start: on long bodies several times faster than `bytes.__contains__`, and a search for `\\`
alone would stop at every `\\"` and `\\n`.)"""
_ESCAPED_SLASH = rb"(?<=\\/)"
"""The branch of the search for spellings that start with `/` that finds a `\\/` escape: the
slash found, preceded by a backslash."""


def request_digest(dialect: str, path: str, query: str, raw: bytes) -> str:
    """The digest record stores and replay looks up: the dialect's name, the path (capability
    off) and query string as the route reads them, and the body's bytes. Each part but the
    last is length-prefixed, so no two different requests run together into the same input."""
    digest = _digest_of_route(dialect, path, query).copy()
    digest.update(raw)
    return digest.hexdigest()


@functools.lru_cache(maxsize=64)
def _digest_of_route(dialect: str, path: str, query: str) -> hashlib._Hash:
    """The digest's state after the parts before the body: an agent sends its calls to a
    path or two, so this is hashed once and copied for each request."""
    parts = [part.encode("utf-8", "surrogateescape") for part in (dialect, path, query)]
    return hashlib.sha256(b"".join(len(part).to_bytes(8, "big") + part for part in parts))


def is_digest(text: str) -> bool:
    return _HEX_DIGEST.match(text) is not None


@dataclass(frozen=True, slots=True)
class FastGate:
    """Whether a flow may take the fast path at all, and the searches for the spellings in
    each request's bytes. The replay backend asks for one per flow (`for_flow`); flows with
    the same facts share it."""

    open: bool
    spellings: tuple[re.Pattern[bytes], ...] = ()
    """One search per byte a spelling starts with (`_searches`)."""

    @classmethod
    def for_flow(cls, spellings: Sequence[str], mocked: bool) -> FastGate:
        # The flows of a suite share their facts: the searches are compiled once for them all.
        return _gate(tuple(spellings), mocked)

    def admits(self, raw: bytes) -> bool:
        """Whether normalising the parse of `raw` is provably the identity."""
        if not self.open:
            return False
        if not self.spellings:
            return True  # nothing to normalise: an escape hides nothing the normaliser seeks
        if holds_ascii_escape(raw):
            return False
        for search in self.spellings:  # (a loop: `any` of a generator costs more than a search)
            if search.search(raw) is not None:
                return False
        return True


def holds_ascii_escape(raw: bytes) -> bool:
    """Whether the JSON text `raw` spells an ASCII character as a `\\u` escape (`"\\u0073"`
    is `"s"`): only then may a key or string that the bytes do not hold be in its parse."""
    return _ASCII_ESCAPE.search(raw) is not None


@functools.lru_cache(maxsize=16)
def _gate(spellings: tuple[str, ...], mocked: bool) -> FastGate:
    # A mock rewrites tool results inside the request: no fast path (see the module doc).
    if mocked or not all(_plain(spelling) for spelling in spellings):
        return FastGate(False)
    return FastGate(True, _searches(spellings))


def _searches(spellings: Sequence[str]) -> tuple[re.Pattern[bytes], ...]:
    """The spellings as few searches as keep each one fast: those that start with the same
    byte share one (`/home/u` and `/tmp` as `/(?:home/u|tmp)`). A search that starts with a
    literal byte scans for it and tries the rest only where it occurs; one alternation of all
    the spellings would try every branch at every byte, and a search per spelling reads the
    body once for each (the default facts have four or five).

    When a spelling holds a `/`, JSON may write it `\\/`: the search for the spellings that
    start with `/` (made for the purpose when none does) also finds that escape, by looking
    back from each slash it stops at, so the body is not read once more for it."""
    by_first: dict[bytes, list[bytes]] = {}
    encoded = tuple(dict.fromkeys(s.encode() for s in spellings))
    for spelling in encoded:
        by_first.setdefault(spelling[:1], []).append(re.escape(spelling[1:]))
    if any(b"/" in spelling for spelling in encoded):
        by_first.setdefault(b"/", []).append(_ESCAPED_SLASH)
    return tuple(
        re.compile(re.escape(first) + b"(?:" + b"|".join(rests) + b")")
        for first, rests in by_first.items()
    )


def _plain(spelling: str) -> bool:
    """A spelling JSON writes only as itself (no `"`, `\\`, control or non-ASCII character)."""
    return spelling.isascii() and not any(
        char in '"\\' or ord(char) < 0x20 or ord(char) == 0x7F for char in spelling
    )


def holds_placeholder(value: Any) -> bool:
    """Whether a stored body holds a normalisation placeholder, in a string or a key."""
    if isinstance(value, str):
        return PLACEHOLDER_MARK in value
    if isinstance(value, list):
        return any(holds_placeholder(item) for item in value)
    if isinstance(value, dict):
        return any(PLACEHOLDER_MARK in key or holds_placeholder(v) for key, v in value.items())
    return False


def is_plain(turn: Turn) -> bool:
    """Whether the turn's stored request holds no placeholder: record normalised nothing in it."""
    return not holds_placeholder(turn.request)

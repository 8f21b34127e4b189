"""Every place flowproof shortens a text for a reader marks its cut, so that a secret cut in
half there leaves no piece of itself once the text is redacted: a divergence's window, the
agent's stderr tail, an upstream's error body."""

from __future__ import annotations

import asyncio

from flowproof.dialects.base import dialect_named
from flowproof.drivers.output import TAIL_BYTES, OutputPipe, _Tail
from flowproof.guards.redaction import Redactor
from flowproof.guards.spellings import last_lines
from flowproof.live.traffic import Traffic
from flowproof.matching.divergence import explain
from flowproof.proxy.forward import _BODY_SHOWN, ForwardBackend, Upstream

TOKEN = "acme-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop"
PIECE = 12


def pieces_shown(text: str) -> list[str]:
    return [
        TOKEN[i : i + PIECE] for i in range(len(TOKEN) - PIECE + 1) if TOKEN[i : i + PIECE] in text
    ]


def prompt(destination: str) -> dict[str, object]:
    content = f"Use token {TOKEN} to book. Go to {destination}. The token again is {TOKEN} ok"
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def test_a_divergence_window_cutting_a_token_leaves_no_piece_once_redacted() -> None:
    chat = dialect_named("openai_chat")
    assert chat is not None
    found = explain(1, 0, "openai_chat", prompt("Nairobi"), chat, prompt("Mombasa"))
    shown = found.render()
    assert "texts differ from character" in shown and pieces_shown(shown)  # cut both sides
    redacted = Redactor({"GH_TOKEN": TOKEN})(shown)
    assert pieces_shown(redacted) == []
    assert redacted.count("[redacted GH_TOKEN]") == 4  # two cuts in each of the two windows


def tail_of(data: bytes) -> str:
    tail = _Tail()
    tail.data_received(data)
    return OutputPipe(-1, tail, None).tail()  # type: ignore[arg-type]


def test_a_stderr_tail_cutting_a_token_leaves_no_piece_once_redacted() -> None:
    after = b" then " + b"y" * (TAIL_BYTES - 36 - 6 - 8) + b"\nfailed\n"
    assert len(after) == TAIL_BYTES - 36  # the kept bytes start 36 bytes before the token ends
    shown = tail_of(f"config: token={TOKEN}".encode() + after)
    assert shown.startswith("…") and pieces_shown(shown)
    assert pieces_shown(Redactor({"GH_TOKEN": TOKEN})(shown)) == []


def test_a_stderr_tail_cut_inside_a_character_shows_no_replacement_character() -> None:
    data = ("ä" * TAIL_BYTES).encode() + b"\nfailed!\n"
    assert (len(data) - TAIL_BYTES) % 2 == 1  # the kept bytes start at the second byte of an ä
    shown = tail_of(data)
    assert shown.startswith("…ä") and "\ufffd" not in shown


def test_an_upstream_error_is_redacted_before_it_is_cut() -> None:
    upstream = Upstream("http://127.0.0.1:9/v1", {}, TOKEN, {"OPENAI_API_KEY": TOKEN})
    backend = ForwardBackend(upstream, {}, Traffic())
    # Cut as it came, the body would end in the middle of the key.
    echoed = "x" * (_BODY_SHOWN - 40) + f"invalid key {TOKEN}: check your settings"
    shown = backend._scrub(echoed)
    asyncio.run(backend.close())
    assert shown.endswith("[redacted OPENAI_API_KEY]: c…") and pieces_shown(shown) == []


def test_last_lines_mark_the_cut_line_only_when_it_is_shown() -> None:
    """The one tail reader behind the agent's stderr and a real MCP server's stderr."""
    assert last_lines(b"b-part\nc\n", cut=True, count=5) == ["…b-part", "c"]
    assert last_lines(b"b-part\r\nc\nd\n", cut=True, count=2) == ["c", "d"]
    assert last_lines(b"a\nb\n", cut=False, count=5) == ["a", "b"]
    assert last_lines(b"", cut=True, count=5) == []

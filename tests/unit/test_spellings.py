"""Every spelling of a secret is found and hidden; a piece of one left at a cut is masked."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from flowproof.guards.spellings import CUT, MIN_FRAGMENT, appears, clip, hide

ODD = 'pa"ss\\wö/rd-Ä1'
"""A value with every character a JSON encoder escapes: a quote, a backslash, a slash (some
encoders), non-ASCII letters."""
TOKEN = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop"
HIDE = {ODD: "[redacted ODD]", TOKEN: "[redacted TOKEN]"}


def nested(value: str, depth: int, ensure_ascii: bool) -> str:
    """`value` as `depth` levels of json.dumps put it: a tool result inside a request body
    inside a document that stores the body."""
    text = value
    for _ in range(depth):
        text = json.dumps({"v": text}, ensure_ascii=ensure_ascii)
    return text


def spelled(value: str) -> dict[str, str]:
    raw = b"prefix:" + value.encode() + b":suffix"
    return {
        "as given": f"say {value}",
        **{
            f"JSON depth {depth}, ensure_ascii={flag}": nested(value, depth, flag)
            for depth in (1, 2, 3, 5)
            for flag in (False, True)
        },
        "upper-case \\u escapes": json.dumps(value).replace("\\u00f6", "\\u00F6"),
        "JSON with escaped slashes": json.dumps({"v": value}).replace("/", "\\/"),
        "percent-encoded": f"?q={quote(value, safe='')}",
        "percent-encoded, plus for space": f"?q={quote_plus(value)}",
        "percent-encoded JSON": f"?q={quote(json.dumps({'v': value}), safe='')}",
        **{
            f"base64 at offset {offset}": base64.b64encode(raw[offset:]).decode()
            for offset in range(3)
        },
        **{
            f"URL-safe base64 at offset {offset}": base64.urlsafe_b64encode(raw[offset:]).decode()
            for offset in range(3)
        },
        "base64 of a JSON body": base64.b64encode(json.dumps({"v": value}).encode()).decode(),
    }


@pytest.mark.parametrize(("form", "text"), spelled(ODD).items())
def test_every_spelling_of_a_value_is_found_and_hidden(form: str, text: str) -> None:
    assert appears(ODD, text), form
    hidden = hide(text, HIDE)
    assert "[redacted ODD]" in hidden and not appears(ODD, hidden), form


def test_a_decoded_json_in_json_spelling_is_gone_after_hiding() -> None:
    """What a report shows when it decodes the stored text must not be the value either."""
    stored = nested(ODD, 3, ensure_ascii=True)
    inner = json.loads(json.loads(json.loads(hide(stored, HIDE))["v"])["v"])["v"]
    assert inner == "[redacted ODD]"


@pytest.mark.parametrize(
    "text",
    [
        "pa ss wörd",  # the same letters, not the value
        "pass\\\\word",
        "u00e4 without a backslash",
        base64.b64encode(b"unrelated bytes entirely").decode(),
        "",
    ],
)
def test_unrelated_text_is_not_a_spelling(text: str) -> None:
    assert not appears(ODD, text) and hide(text, HIDE) == text


def test_empty_values_never_appear() -> None:
    assert not appears("", "anything") and hide("anything", {"": "[x]"}) == "anything"


def test_a_short_value_is_not_looked_for_in_base64() -> None:
    """Fewer than MIN_FRAGMENT characters of base64 turn up by chance."""
    assert not appears("k9", base64.b64encode(b"..k9..").decode())
    assert appears("k9", "use k9 now")


def test_clip_marks_where_it_cut() -> None:
    assert clip("abcdef", 3) == "abc" + CUT
    assert clip("abc", 3) == "abc"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # the start of the value, cut off by a window's right edge (inside a JSON string)
        (f'…"token {TOKEN[:30]}"…', '…"token [redacted TOKEN]"…'),
        # the end of it, after a left cut (a stderr tail)
        (f"{CUT}{TOKEN[20:]} and more", f"{CUT}[redacted TOKEN] and more"),
        # a middle part, between two cuts (a window narrower than the value)
        (f'x …"{TOKEN[10:40]}"… y', 'x …"[redacted TOKEN]"… y'),
        # the same window as a JSON document stores it: escaped quotes, escaped mark
        (json.dumps(f'…"token {TOKEN[:30]}"…'), json.dumps('…"token [redacted TOKEN]"…')),
        (
            json.dumps(f"…{TOKEN[9:]}", ensure_ascii=True),
            json.dumps("…[redacted TOKEN]", ensure_ascii=True),
        ),
        # a piece of a JSON-escaped spelling
        (f"{json.dumps(ODD)[1:12]}…", "[redacted ODD]…"),
    ],
)
def test_a_piece_of_a_value_at_a_cut_is_masked(text: str, shown: str) -> None:
    assert hide(text, HIDE) == shown


def test_pieces_shorter_than_the_minimum_or_away_from_a_cut_stay() -> None:
    short = TOKEN[: MIN_FRAGMENT - 1]
    assert hide(f"{short}…", HIDE) == f"{short}…"
    assert hide(f"{TOKEN[:MIN_FRAGMENT]}…", HIDE) == "[redacted TOKEN]…"
    assert hide(f"{TOKEN[:30]} and no cut", HIDE) == f"{TOKEN[:30]} and no cut"


def test_a_value_containing_another_is_hidden_whole() -> None:
    assert hide("abcdef abc", {"abc": "[S]", "abcdef": "[L]"}) == "[L] [S]"

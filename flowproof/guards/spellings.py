"""Every spelling of a secret value: the one answer to "does this secret appear in this text",
shared by `assert_no_secret_leak`, the trace lint (and so the store guard that runs it before a
record writes), the trace store's own refusal, and the redactor.

An agent rarely sends a value the way it was given. A tool result is usually `json.dumps(...)`
of a dict, which the SDK then puts inside the JSON of the request, so a value holding `"`, `\\`
or a non-ASCII letter reaches the wire escaped once or twice (`\\"`, `\\\\`, `\\u00e4`); a
flowproof document that stores that body escapes it once more. A query string carries it
percent-encoded; a data URL or an attachment carries it in base64, at any offset of the encoded
bytes. Looking for the raw value alone misses all of these, and a report that decodes them for
a reader would show the value in clear. So each value is looked for in all of these forms:

- as given;
- JSON-escaped to any depth (`\\"`, `\\\\`, `\\n`, `\\/`, `\\u00e4` or `\\u00E4`, with or without
  `ensure_ascii`): one expression per value, in which each character a JSON encoder may escape
  stands for itself or for a run of backslashes and its escape, so every depth is one search;
- percent-encoded (`quote`, `quote_plus`), of the value and of its JSON-escaped form;
- base64, standard and URL-safe, at each of the three alignments a value can start at inside a
  longer encoded text, of the value and of its JSON-escaped form; only the characters that the
  value's bytes alone decide are looked for, and not at all when fewer than MIN_FRAGMENT remain
  (a shorter run turns up by chance).

What stays out of reach is a value the agent itself transforms (hashes, splits, reverses,
re-encodes in a way not listed): no scan of the text can recognise it.

Texts that flowproof shortens for a reader (a divergence's window, the agent's stderr tail, an
upstream error) mark every cut with CUT. A cut can fall inside a value, leaving a piece of it
beside the mark; `hide` masks a run of MIN_FRAGMENT or more characters of any spelling that
touches a cut, so a window never shows half a key. Pure: text in, text out.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from urllib.parse import quote, quote_plus

MIN_FRAGMENT = 8
"""The shortest run of a secret masked at a cut, and the shortest base64 form looked for."""
CUT = "…"
"""The mark every clip leaves where it cut text away."""
_CUT_MARKS = (CUT, "\\u2026")
"""The mark as written, and as a JSON encoder with `ensure_ascii` writes it."""
_QUOTING = '\\"'
"""Characters a JSON string may put between a cut mark and the text it cut."""
_PIECE_DEPTH = 3
"""JSON levels looked at for a piece at a cut: a window of a body is escaped once to be shown
and once more in the run record that stores it."""
_SHORT_ESCAPES = {"\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}


def clip(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, with CUT where the rest was dropped."""
    return text if len(text) <= limit else text[:limit] + CUT


def last_lines(kept: bytes, cut: bool, count: int) -> list[str]:
    """The last `count` lines of what a bounded reader `kept` of a stream; `cut`: it dropped
    the stream's beginning, so the first line, when shown, starts with CUT. A cut inside a
    character drops that character's remaining bytes rather than show a replacement for them
    (which would stand between the mark and the text it cut)."""
    if cut:
        kept = kept.lstrip(bytes(range(0x80, 0xC0)))
    text = kept.decode(errors="replace")
    if not text:
        return []
    lines = [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]
    if cut and len(lines) <= count:
        lines[0] = CUT + lines[0]
    return lines[-count:]


def appears(value: str, text: str) -> bool:
    """Whether `value` appears in `text` in any spelling (empty values never do)."""
    return bool(value) and _pattern(value).search(text) is not None


def hide(
    text: str,
    markers: Mapping[str, str],
    patterns: Callable[[str], re.Pattern[str]] | None = None,
) -> str:
    """`text` with every spelling of each value in `markers` (value → what to show instead)
    replaced by its marker, and every piece of one left at a cut masked the same way.
    `patterns`: where each value's expression comes from (`spelling_pattern` unless given)."""
    if not markers:  # every line flowproof prints comes here, mostly with nothing to hide
        return text
    pattern = patterns or _pattern
    # Longest first, so a value that contains another is replaced whole.
    ordered = sorted((value for value in markers if value), key=len, reverse=True)
    for value in ordered:
        text = pattern(value).sub(_literal(markers[value]), text)
    if any(mark in text for mark in _CUT_MARKS):
        pieces = [(form, markers[value]) for value in ordered for form in _piece_forms(value)]
        text = _mask_cut_pieces(text, pieces)
    return text


def _literal(marker: str) -> Callable[[re.Match[str]], str]:
    """A replacement taken as it is (`re.sub` would read backslashes in a string)."""
    return lambda _: marker


def spelling_pattern(value: str) -> re.Pattern[str]:
    """The one expression that finds `value` in every spelling (compiled afresh: a caller
    that hides more values than the shared cache holds keeps the ones it compiled)."""
    return _pattern.__wrapped__(value)


@lru_cache(maxsize=256)
def _pattern(value: str) -> re.Pattern[str]:
    """One expression for every spelling of `value`: JSON escaping at any depth is a run of
    one or more backslashes before each escaped character, so a character class per character
    covers every depth at once."""
    escaped = "".join(_any_depth(char) for char in value)
    encoded = sorted(_encoded_forms(value), key=len, reverse=True)
    return re.compile("|".join([escaped, *map(re.escape, encoded)]))


def _any_depth(char: str) -> str:
    if char.isascii() and char.isalnum():
        return char  # never escaped by a JSON encoder
    units = char.encode("utf-16-be")
    codes = "".join(
        rf"\\+u(?i:{int.from_bytes(units[i : i + 2], 'big'):04x})" for i in range(0, len(units), 2)
    )
    if char == "\\":
        plain = r"\\+"  # the character itself, then doubled at each level
    elif char in _SHORT_ESCAPES:
        plain = re.escape(char) + r"|\\+" + _SHORT_ESCAPES[char]
    else:
        plain = r"\\*" + re.escape(char)  # `"` and `/` gain backslashes; others stay bare
    return f"(?:{plain}|{codes})"


def _json_levels(value: str, depth: int) -> list[str]:
    """The value and its JSON-escaped forms down to `depth` levels, with and without
    `ensure_ascii`, in both cases of hex digits."""
    level, found = {value}, {value}
    for _ in range(depth):
        level = {deeper for form in level for deeper in _escaped_once(form)} - found
        found |= level
    return sorted(found, key=len, reverse=True)


def _escaped_once(text: str) -> set[str]:
    plain = json.dumps(text, ensure_ascii=False)[1:-1]
    return {plain, _ascii(plain, "{:04x}"), _ascii(plain, "{:04X}")}


def _ascii(text: str, digits: str) -> str:
    """`text` with every non-ASCII character written `\\uXXXX` (a surrogate pair above the
    basic plane), as `json.dumps(..., ensure_ascii=True)` does, in the case `digits` gives."""
    out = []
    for char in text:
        if char.isascii():
            out.append(char)
            continue
        units = char.encode("utf-16-be")
        out.extend(
            "\\u" + digits.format(int.from_bytes(units[i : i + 2], "big"))
            for i in range(0, len(units), 2)
        )
    return "".join(out)


@lru_cache(maxsize=256)
def _encoded_forms(value: str) -> frozenset[str]:
    """Percent-encoded and base64 forms of the value and of its once-escaped JSON forms (a
    JSON body put in a query string or a data URL)."""
    forms = {form for seed in _json_levels(value, 1) for form in _encodings(seed)}
    return frozenset(forms - {value})


def _encodings(text: str) -> set[str]:
    forms = {quote(text, safe=""), quote(text), quote_plus(text)}
    raw = text.encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            # Encoded after `offset` other bytes, the value's own characters are those whose
            # six bits come from it alone: from bit 8*offset to bit 8*(offset+len).
            whole = encode(bytes(offset) + raw).decode()
            core = whole[-(-8 * offset // 6) : 8 * (offset + len(raw)) // 6]
            if len(core) >= MIN_FRAGMENT:
                forms.add(core)
    return forms


@lru_cache(maxsize=256)
def _piece_forms(value: str) -> tuple[str, ...]:
    forms = {*_json_levels(value, _PIECE_DEPTH), *_encoded_forms(value)}
    return tuple(sorted((f for f in forms if len(f) > MIN_FRAGMENT), key=len, reverse=True))


def _mask_cut_pieces(text: str, forms: list[tuple[str, str]]) -> str:
    """Mask the run of a spelling that a cut left beside its mark: the start of one before
    a mark, the end of one after it, or a middle part between two marks."""
    marks = sorted(
        (found.start(), found.end())
        for found in re.finditer("|".join(map(re.escape, _CUT_MARKS)), text)
    )
    longest = max((len(form) for form, _ in forms), default=0)
    spans: list[tuple[int, int, str]] = []
    for number, (start, end) in enumerate(marks):
        spans += _piece_before(text, start, forms)
        following = marks[number + 1][0] if number + 1 < len(marks) else None
        near = following is not None and following - end <= longest + 2 * len(_QUOTING)
        spans += _piece_after(text, end, following if near else None, forms)
    for start, end, marker in reversed(_merged(spans)):
        text = text[:start] + marker + text[end:]
    return text


def _piece_before(text: str, at: int, forms: list[tuple[str, str]]) -> list[tuple[int, int, str]]:
    """The longest start of a spelling that ends right before the mark at `at`."""
    end = _skip_quoting_back(text, at)
    for form, marker in forms:
        head = form[:MIN_FRAGMENT]
        start = text.find(head, max(0, end - len(form) + 1), end)
        while start != -1:
            if form.startswith(text[start:end]):
                return [(start, end, marker)]
            start = text.find(head, start + 1, end)
    return []


def _piece_after(
    text: str, at: int, next_mark: int | None, forms: list[tuple[str, str]]
) -> list[tuple[int, int, str]]:
    """The longest end of a spelling that starts right after the mark ending at `at`, or a
    middle part of one that reaches the next mark (at `next_mark`, given when it is near
    enough for the text between to be such a part)."""
    start = _skip_quoting(text, at)
    head = text[start : start + MIN_FRAGMENT]
    if len(head) < MIN_FRAGMENT:
        return []
    between = text[start : _skip_quoting_back(text, next_mark)] if next_mark is not None else ""
    for form, marker in forms:
        if len(between) >= MIN_FRAGMENT and between in form:
            return [(start, start + len(between), marker)]
        inside = form.find(head)
        while inside != -1:
            if text.startswith(form[inside:], start):
                return [(start, start + len(form) - inside, marker)]
            inside = form.find(head, inside + 1)
    return []


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans joined, in order, each keeping its first marker."""
    merged: list[tuple[int, int, str]] = []
    for start, end, marker in sorted(spans):
        if merged and start <= merged[-1][1]:
            first = merged[-1]
            merged[-1] = (first[0], max(first[1], end), first[2])
        else:
            merged.append((start, end, marker))
    return merged


def _skip_quoting(text: str, at: int) -> int:
    while at < len(text) and text[at] in _QUOTING:
        at += 1
    return at


def _skip_quoting_back(text: str, at: int) -> int:
    while at > 0 and text[at - 1] in _QUOTING:
        at -= 1
    return at

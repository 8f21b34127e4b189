"""Declared volatile fields (`ignore_fields:`): request-body paths left out of matching.

A path is written the way divergences name body places: keys joined by dots, a list position
in brackets, and `[*]` for every position (`metadata.user_id`, `input[*].id`). Matching strips
each declared path from both the recorded and the replayed body before comparing them, so the
field's value, and whether it is there at all, no longer decide a match; the trace keeps what
was recorded, untouched.

What may be declared is narrow on purpose (design: "Settled in review" keeps matching free of
holes in prompts). A path into the conversation or what the model is told to do with it is
refused, whatever lies below it. The one exception is an item's own identity, directly under
`messages[*]` or `input[*]`: its `id`, which clients mint per run, and the per-item client
bookkeeping Codex CLI attaches to every input item (`internal_chat_message_metadata_passthrough`:
the id of the turn that made the item and its creation time). Neither is sent to the model as
part of the conversation, and neither carries content; ignoring one leaves every other field of
the item strict.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ANY_INDEX = "*"
"""The segment `[*]` parses to: every position of a list."""

Segment = str | int
"""A dict key, a list position, or ANY_INDEX (which is spelled `[*]`, never as a key)."""

CONVERSATION_KEYS = (
    "messages",
    "input",
    "system",
    "instructions",
    "contents",
    "tools",
    "tool_choice",
    "model",
)
"""Top-level request keys that hold the conversation, the tools or the model: matching is
strict inside them (a changed prompt is what flowproof exists to catch)."""
ITEM_IDENTITY = ("messages", "input")
"""The lists whose items may carry per-run identity fields (`messages[*].id`, `input[*].id`)."""
ITEM_IDENTITY_FIELDS = ("id", "internal_chat_message_metadata_passthrough")
"""An item's own identity: its id, and Codex CLI's per-item turn id and creation time."""
CALL_IDENTITY = r"contents\[\*\]\.parts\[\*\]\.(?:functionCall|functionResponse)\.id"
"""A Gemini function call's id and its response's: the model may send none, and a client
then mints one per run (Gemini CLI: `<tool>_<epoch ms>_<n>`) to pair the call with its answer."""

ITEM_IDENTITY_PATH = re.compile(
    rf"(?:(?:{'|'.join(ITEM_IDENTITY)})\[\*\]\.(?:{'|'.join(ITEM_IDENTITY_FIELDS)})"
    rf"|{CALL_IDENTITY})(?=$|[.\[])"
)
"""An item's own identity field (`input[*].id`, Codex's per-item
`input[*].internal_chat_message_metadata_passthrough`, a Gemini call's id), the one place inside
the conversation `ignore_fields:` admits; whatever lies below it is declared with it."""

_KEY = re.compile(r"[^.\[\]]+")
_INDEX = re.compile(r"\[(\*|\d+)\]")


@dataclass(frozen=True, slots=True)
class FieldPath:
    """One declared path, as written and as segments."""

    text: str
    segments: tuple[Segment, ...]

    def __str__(self) -> str:
        return self.text


def parse_field_path(text: str) -> FieldPath:
    """`input[*].id` → ("input", "*", "id"); a malformed path is a ValueError saying why."""
    if not text or text != text.strip():
        raise ValueError(f"'{text}' is not a path: write it as `metadata.user_id` or `input[*].id`")
    segments: list[Segment] = []
    position = 0
    expect_key = True
    while position < len(text):
        if expect_key:
            key = _KEY.match(text, position)
            if key is None:
                raise ValueError(f"'{text}': expected a key at character {position + 1}")
            if key.group(0) == ANY_INDEX:
                raise ValueError(f"'{text}': `*` stands for a list position; write `[*]`")
            segments.append(key.group(0))
            position = key.end()
            expect_key = False
            continue
        index = _INDEX.match(text, position)
        if index is not None:
            segments.append(ANY_INDEX if index.group(1) == "*" else int(index.group(1)))
            position = index.end()
        elif text[position] == "." and position + 1 < len(text):
            position += 1
            expect_key = True
        else:
            raise ValueError(
                f"'{text}': unexpected {text[position]!r} at character {position + 1} "
                "(keys are joined by `.`, list positions are `[N]` or `[*]`)"
            )
    return FieldPath(text, tuple(segments))


def forbidden_reason(path: FieldPath) -> str | None:
    """Why `path` may not be ignored, or None when it may."""
    top = path.segments[0]
    if top not in CONVERSATION_KEYS:
        return None
    if ITEM_IDENTITY_PATH.fullmatch(_any_position(path)):
        return None  # a conversation item's own identity: minted per run, no content
    where = f"`{top}` is" if len(path.segments) == 1 else f"'{path.text}' is inside `{top}`,"
    return (
        f"{where} part of what the model is asked (the conversation, its tools, the model); "
        "matching stays strict there, since a changed prompt is what a replay must catch. "
        "Only an item's own identity may be ignored: `messages[*].id`, `input[*].id`, "
        "`input[*].internal_chat_message_metadata_passthrough`, "
        "`contents[*].parts[*].functionCall.id`, `contents[*].parts[*].functionResponse.id`"
    )


def _any_position(path: FieldPath) -> str:
    """`path` with every list position spelled `[*]`: `input[0].id` → `input[*].id`."""
    text = ""
    for segment in path.segments:
        if isinstance(segment, int) or segment == ANY_INDEX:
            text += "[*]"
        else:
            text += f".{segment}" if text else segment
    return text


def checked_field_path(text: str) -> str:
    """A declared path, validated (the spec model's validator); the ValueError says why not."""
    if not isinstance(text, str):
        raise ValueError("each ignore_fields entry is a body path such as `metadata.user_id`")
    reason = forbidden_reason(parse_field_path(text))
    if reason is not None:
        raise ValueError(reason)
    return text


def strip_fields(body: Any, paths: Sequence[FieldPath]) -> Any:
    """A copy of `body` without the values at `paths` (the body itself when none is given).

    A path that does not reach anything (a missing key, an index past the end, a step into a
    string) strips nothing: absence and presence are the same to an ignored field.
    """
    for path in paths:
        body = _without(body, path.segments)
    return body


def _without(value: Any, segments: tuple[Segment, ...]) -> Any:
    head, rest = segments[0], segments[1:]
    if isinstance(value, dict) and isinstance(head, str) and head != ANY_INDEX:
        if head not in value:
            return value
        if not rest:
            return {key: item for key, item in value.items() if key != head}
        return {key: (_without(item, rest) if key == head else item) for key, item in value.items()}
    if isinstance(value, list) and (head == ANY_INDEX or isinstance(head, int)):
        chosen = range(len(value)) if head == ANY_INDEX else [head]
        if not rest:  # dropping list items would shift every later position: blank them
            return [None if index in chosen else item for index, item in enumerate(value)]
        return [
            _without(item, rest) if index in chosen else item for index, item in enumerate(value)
        ]
    return value

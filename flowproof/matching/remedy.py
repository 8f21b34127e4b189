"""Which spec line would have made a divergent request match: the remedy a divergence names.

Pure. Given where two request bodies first differ and both values, say what kind of drift it
is and, when a declaration answers it, which:

- an environment fact that moved between the two runs (`cwd`, `home`, `tmpdir`: the caller says
  which spelling each side had) → `normalize: [cwd]`;
- a date on both sides, different → `normalize: [date]`;
- an identifier on both sides (a UUID, a ULID, a long hex or decimal run), different →
  `ignore_fields: [metadata.user_id]` where matching may ignore the field, else why not;
- any other difference in the output of a tool the agent ran itself → a `tools:` entry with a
  `result:` for that tool, so both runs send the same output.

Anything else is not classified: a changed prompt is what a replay exists to catch, so no
remedy is guessed for it. `flowproof run` names a remedy only for the shapes above, which need
no knowledge of the recording's environment; `record --verify` also knows both runs'
directories and passes them in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowproof.guards.spellings import CUT
from flowproof.matching.fields import ITEM_IDENTITY_PATH, forbidden_reason, parse_field_path

DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"|\d{1,2}/\d{1,2}/\d{4}"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\b"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2}\b"
)
"""The spellings `normalize: [date]` covers (ISO, numeric, weekday and month names)."""
IDENTIFIER = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|[0-9A-HJKMNP-TV-Z]{26}"
    r"|(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{12,}"
    r"|\d{10,}"
)
"""A UUID, a ULID, a hex run of 12+ with letters and digits, or a 10+ digit number (a stamp)."""
TOOL_RESULT = "<the output the agent should see>"
"""Where a `result:` remedy leaves the output for the user to write."""
_TOKEN = re.compile(r"[A-Za-z0-9_\-:./]")


@dataclass(frozen=True, slots=True)
class Remedy:
    """What kind of drift a divergence is, and the declaration that answers it."""

    kind: str
    """`cwd`, `home`, `tmpdir`, `date`, `id` or `tool result`."""
    normalize: str | None = None
    ignore_field: str | None = None
    tool: str | None = None
    """The tool whose output differs, for a `result:` declaration."""
    why_not: str | None = None
    """Why no declaration answers it (an identifier inside the conversation)."""
    seen: str = ""
    """What the replayed side holds there: the moved directory, the date, the id."""

    @property
    def line(self) -> str | None:
        """The spec line to add, in the spelling the spec takes."""
        if self.normalize:
            return f"normalize: [{self.normalize}]"
        if self.ignore_field:
            quoted = re.search(r"[\[\]*,:{}#&!|>'\"%@`$]", self.ignore_field)
            shown = json.dumps(self.ignore_field) if quoted else self.ignore_field
            return f"ignore_fields: [{shown}]"
        if self.tool:
            return f"tools: - name: {self.tool}  result: {TOOL_RESULT}"
        return None


def classify(
    path: str,
    recorded: Any,
    replayed: Any,
    moved: Mapping[str, tuple[str, str]] | None = None,
    recorded_body: Any = None,
) -> Remedy | None:
    """The remedy for a divergence at `path` (a body path as divergences name it), or None.

    `moved`: fact key (`cwd`, `home`, `tmpdir`) → (its spelling at record, its spelling now).
    `recorded_body`: the recorded request, to tell a tool's output from the conversation."""
    body_path = path.split(": ", 1)[0]
    # A fact `normalize:` covers is answered by it wherever it appears, a tool's output
    # included; any other difference in a tool's output is the tool's.
    tool = tool_result_name(recorded_body, body_path) if recorded_body is not None else None
    if not isinstance(recorded, str) or not isinstance(replayed, str):
        found = _identifier(body_path, str(recorded), str(replayed), recorded_body)
        return Remedy("tool result", tool=tool) if tool is not None else found
    whole = _value_at(recorded_body, body_path) if recorded_body is not None else recorded
    for key, (before, after) in (moved or {}).items():
        if _moved_here(whole if isinstance(whole, str) else recorded, replayed, before, after):
            return Remedy(key, normalize=key, seen=after)
    old, new = _differing_tokens(recorded, replayed)
    was, date = DATE.findall(old), DATE.findall(new)
    if was and date and was != date:  # a date near an edit, the same on both sides, is not it
        return Remedy("date", normalize="date", seen=_first_new(was, date))
    if tool is not None:
        return Remedy("tool result", tool=tool)
    return _identifier(body_path, old, new, recorded_body)


def _identifier(path: str, old: str, new: str, recorded_body: Any = None) -> Remedy | None:
    was, ids = IDENTIFIER.findall(old), IDENTIFIER.findall(new)
    if not was or not ids or was == ids:  # an id beside an edit, the same on both sides
        return None
    seen = _first_new(was, ids)
    general = re.sub(r"\[\d+\]", "[*]", path)
    if identity := ITEM_IDENTITY_PATH.match(general):  # an item's own identity, declared whole
        general = identity.group(0)
    else:
        general = _object_of_ids(general, recorded_body)
    try:
        reason = forbidden_reason(parse_field_path(general))
    except ValueError:
        reason = "the path cannot be declared"
    if reason is None:
        return Remedy("id", ignore_field=general, seen=seen)
    return Remedy("id", seen=seen, why_not=undeclarable_id(general.split(".")[0].split("[")[0]))


def undeclarable_id(top: str) -> str:
    """What can fix a per-run value inside the conversation (`top`: `messages`, `input`, ...),
    which no `ignore_fields:` entry may declare: the user's own agent stops sending it, a tool
    that produces it gets a `result:`."""
    return (
        f"inside the conversation ({top}), where matching stays strict: no ignore_fields entry "
        "declares it. If the agent is your own code, stop sending it; if it is a tool's output, "
        "give that tool a `result:` in the spec's `tools:`; otherwise the trace matches only the "
        "run it was recorded in"
    )


def _object_of_ids(path: str, recorded_body: Any) -> str:
    """`path`'s parent object when it holds several ids of its own outside the conversation
    (Codex CLI's `client_metadata`: a thread, a turn, a window and a session id), declared as
    one entry as doctor does; `path` otherwise. One replay finds one id, so naming the object
    spares a replay per id and gives the line doctor gives."""
    parent, dot, _ = path.rpartition(".")
    if not dot or forbidden_reason(parse_field_path(parent)) is not None:
        return path
    values = _value_at(recorded_body, parent)
    if not isinstance(values, Mapping):
        return path
    ids = [v for v in values.values() if isinstance(v, str) and IDENTIFIER.fullmatch(v)]
    return parent if len(ids) >= 2 else path


def _first_new(before: list[str], after: list[str]) -> str:
    """The first value on the replayed side that the recorded side did not hold."""
    return next((value for value in after if value not in before), after[0])


def _differing_tokens(recorded: str, replayed: str) -> tuple[str, str]:
    """The word each text has where the two first differ (widened to letters, digits and
    the punctuation of paths, dates and ids)."""
    start = next(
        (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
        min(len(recorded), len(replayed)),
    )
    return _token_at(recorded, start), _token_at(replayed, start)


def _token_at(text: str, at: int) -> str:
    lo = at
    while lo > 0 and _TOKEN.match(text[lo - 1]):
        lo -= 1
    hi = at
    while hi < len(text) and _TOKEN.match(text[hi]):
        hi += 1
    # A date spelled with spaces ("Wed Dec 02 2026", "December 2, 2026") is searched whole.
    return text[max(0, lo - 12) : hi + 12]


def _moved_here(recorded: str, replayed: str, before: str, after: str) -> bool:
    """Whether the replayed text is the recorded one with `before` moved to `after`: the
    recorded value holds `before`, and the replayed one (or the window of it a divergence
    shows) is found in the recorded value with `before` replaced by `after`."""
    if len(before) < 4 or before == after or before not in recorded:
        return False
    return _unwindowed(replayed) in recorded.replace(before, after)


def _unwindowed(shown: str) -> str:
    """The text a divergence shows (JSON, perhaps a window cut short with `…`), as text."""
    inner = shown.strip(CUT)
    try:
        text = json.loads(inner)
    except ValueError:
        return shown
    return text if isinstance(text, str) else shown


def _value_at(body: Any, path: str) -> Any:
    """The value at a body path (`messages[0].content`) in `body`; None when there is none."""
    try:
        segments = parse_field_path(path).segments
    except ValueError:
        return None
    for segment in segments:
        if isinstance(segment, int) and isinstance(body, list) and segment < len(body):
            body = body[segment]
        elif isinstance(segment, str) and isinstance(body, Mapping):
            body = body.get(segment)
        else:
            return None
    return body


def tool_result_name(body: Any, path: str) -> str | None:
    """The tool whose output sits at `path` in a request body, in any of the three wire
    shapes (a chat `tool` message, a Responses `function_call_output` item, an Anthropic
    `tool_result` block); None when `path` is not inside one."""
    found = re.match(r"(messages|input)\[(\d+)\](?:\.content\[(\d+)\])?", path)
    if found is None or not isinstance(body, Mapping):
        return None
    items = body.get(found.group(1))
    index = int(found.group(2))
    if not isinstance(items, list) or index >= len(items) or not isinstance(items[index], dict):
        return None
    item = items[index]
    if item.get("role") == "tool":
        return _call_name(items[:index], str(item.get("tool_call_id")))
    if item.get("type") == "function_call_output":
        return _call_name(items[:index], str(item.get("call_id")))
    blocks = item.get("content")
    if found.group(3) is not None and isinstance(blocks, list):
        block = blocks[int(found.group(3))] if int(found.group(3)) < len(blocks) else None
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return _call_name(items[:index], str(block.get("tool_use_id")))
    return None


def _call_name(earlier: list[Any], call_id: str) -> str | None:
    """The name of the tool call `call_id` among the earlier items, in any wire shape."""
    for item in reversed(earlier):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call" and item.get("call_id") == call_id:
            return str(item.get("name"))
        for call in item.get("tool_calls") or []:
            if isinstance(call, dict) and call.get("id") == call_id:
                return str((call.get("function") or {}).get("name"))
        content = item.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("id") == call_id:
                return str(block.get("name"))
    return None

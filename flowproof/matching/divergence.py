"""Why a replayed request matches no recorded turn, in the order a reviewer wants to read it.

Envelope first (dialect, model, tool names, message roles and count), because "you added a
tool" is a one-line answer where a byte diff of two long prompts is unreadable; then the
JSON paths whose values differ, each with both values (every one, up to ten, so a renamed
argument names its old key and its new one). Tool-call `arguments` are JSON inside a string,
so the diff descends into them when both sides parse, and shows them whole when not.
Fields the flow declared volatile (`ignore_fields:`) are left out of the diff, as they are
out of matching: a divergence never names an ignored path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, overload

from flowproof.assertions.paths import ABSENT, differences, format_indexed, format_path
from flowproof.core.lanes import MODEL_LANE
from flowproof.core.readjson import read_json
from flowproof.core.words import plural
from flowproof.dialects.base import Dialect
from flowproof.guards.spellings import CUT, clip
from flowproof.matching.fields import FieldPath
from flowproof.matching.match import compared
from flowproof.matching.remedy import classify

"""The lane of every divergence at the model boundary."""
EQUAL_BODIES = "the bodies are equal (no difference found)"
REORDERED = "same keys in a different order"
SAME_JSON = "same JSON, different bytes"
_SHOWN = 160


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place two request bodies differ, both values as a reader is shown them."""

    path: str
    """Where: a body path (`messages[1].content`; `(body)` is the body itself). Inside a string
    that holds JSON, the dotted path within it follows after `: `
    (`messages[1].tool_calls[0].function.arguments: flight.id`)."""
    recorded: str
    """The recorded value as shown: JSON text cut at 160 characters, the window of a long text
    around where it first differs, or (for a key order) the list of keys."""
    replayed: str
    """The replayed value, shown the same way."""
    note: str = ""
    """What kind of difference, when it is more than two values: "same keys in a different
    order", "texts differ from character N", "same JSON, different bytes"."""

    def __str__(self) -> str:
        return self.line

    @property
    def location(self) -> str:
        """Where, with the note when there is one (`(body): same JSON, different bytes`)."""
        return f"{self.path}: {self.note}" if self.note else self.path

    @property
    def line(self) -> str:
        """`location: recorded X, replayed Y`, as the terminal prints it."""
        return f"{self.location}: recorded {self.recorded}, replayed {self.replayed}"


@dataclass(frozen=True, slots=True)
class Divergence:
    """A replayed request that no unconsumed recorded turn serves.

    The one divergence of flowproof: the matcher and the MCP lane find it, the run record
    stores it (runrecord/model.py describes its JSON), and every report and front door reads
    it, by the properties below as well as by its fields."""

    lane: str
    """Which boundary: "model" for a model call."""
    index: int
    """1-based arrival number of the request that diverged."""
    recorded_index: int | None
    """1-based number of the recorded turn it was compared with (None: none was left)."""
    envelope: tuple[str, ...]
    """Envelope differences, one line each."""
    difference: Difference | None
    """The first differing path with both values; None when there is none to show."""
    reason: str = ""
    """Why there is no `difference`: every recorded turn was served, or the bodies are equal."""
    remedy: str = ""
    """What to declare so that this request matches, when the difference's shape says it
    (a date, a per-run id, a tool's output: matching/remedy.py); empty otherwise."""
    others: tuple[Difference, ...] = ()
    """The differing fields after `difference` (a renamed argument's new key), bounded."""
    unshown: int = 0
    """How many more fields differ beyond `difference` and `others`."""
    conversation_turn: int | None = None
    """In a `conversation:` flow, the user turn the request was sent in."""
    turn_request: int | None = None
    """In a `conversation:` flow, the request's 1-based place among its user turn's."""
    shape: tuple[int, int] | None = None
    """(recorded, replayed) model requests of the user turn, when the replay sent more
    requests in it than its recording holds: the conversation's shape changed."""

    @property
    def fields(self) -> FieldDifferences:
        """Every differing field shown, the first one first."""
        first = (self.difference,) if self.difference is not None else ()
        return FieldDifferences((*first, *self.others), self.unshown)

    @property
    def detail(self) -> str:
        """The difference's line, or the reason there is none."""
        return str(self.difference) if self.difference is not None else self.reason

    @property
    def headline(self) -> str:
        if self.lane != MODEL_LANE:  # a tool boundary: the MCP server's lane
            if self.recorded_index is None:
                return f"{self.lane}: call {self.index} is an extra call: {self.detail}"
            return (
                f"{self.lane}: call {self.index} matches no recorded call "
                f"(compared with recorded call {self.recorded_index})"
            )
        if self.shape is not None:
            recorded, replayed = self.shape
            return (
                f"conversation shape changed at turn {self.conversation_turn}: recorded "
                f"{plural(recorded, 'request')}, replayed {replayed}"
            )
        if self.conversation_turn is not None:
            compared_with = (
                f"compared with recorded turn {self.recorded_index}"
                if self.recorded_index is not None
                else self.detail
            )
            return (
                f"turn {self.conversation_turn}, request {self.turn_request} (request "
                f"{self.index} of the flow) matches no recorded request of turn "
                f"{self.conversation_turn} ({compared_with})"
            )
        if self.recorded_index is None:
            return f"request {self.index} is an extra model call: {self.detail}"
        return (
            f"request {self.index} matches no recorded turn "
            f"(compared with recorded turn {self.recorded_index})"
        )

    @property
    def on_mcp(self) -> bool:
        """On an MCP lane: `index` and `recorded_index` count that lane's calls, not turns."""
        return self.lane != MODEL_LANE

    @property
    def subject(self) -> str:
        """`request 3` (model) or `mcp.files call 3`."""
        return f"{self.lane} call {self.index}" if self.on_mcp else f"request {self.index}"

    @property
    def recorded_noun(self) -> str:
        """What `recorded_index` counts: `turn` or `call`."""
        return "call" if self.on_mcp else "turn"

    @property
    def show_detail(self) -> bool:
        """An extra call's detail is already in its headline; an envelope line is not repeated."""
        return self.recorded_index is not None and self.detail not in self.envelope

    @property
    def text(self) -> str:
        """The whole divergence message, as flowproof prints it (`render()`)."""
        return self.render()

    # The first difference's parts, and the Python API's names (doors/api.py), kept for
    # their readers.

    @property
    def path(self) -> str | None:
        """The first path at which the bodies differ; None when there is none."""
        return self.difference.path if self.difference else None

    @property
    def recorded(self) -> str | None:
        return self.difference.recorded if self.difference else None

    @property
    def replayed(self) -> str | None:
        return self.difference.replayed if self.difference else None

    @property
    def note(self) -> str:
        return self.difference.note if self.difference else ""

    @property
    def request(self) -> int:
        """`index`: the 1-based arrival number of the request that diverged."""
        return self.index

    @property
    def turn(self) -> int | None:
        """`recorded_index`: the recorded turn (or MCP call) it was compared with."""
        return self.recorded_index

    @property
    def more_fields(self) -> int:
        """`unshown`: how many more fields differ beyond `fields`."""
        return self.unshown

    @property
    def message(self) -> str:
        """`text`: the whole divergence message."""
        return self.render()

    def render(self) -> str:
        lines = [self.headline, *self.envelope]
        if self.recorded_index is not None and self.detail not in self.envelope:
            lines.append(self.detail)
            lines += self.fields.lines()[1:]
        if self.remedy:
            lines.append(f"remedy: {self.remedy}")
        return "\n".join(lines)


def extra_call(index: int, recorded_count: int) -> Divergence:
    """Request `index` arrived after every one of the `recorded_count` turns was served."""
    reason = f"all {recorded_count} recorded turns were already served"
    return Divergence(MODEL_LANE, index, None, (), None, reason)


def shape_changed(index: int, user_turn: int, recorded: int, replayed: int) -> Divergence:
    """Request `index`, the `replayed`-th of user turn `user_turn`, arrived after every one of
    the turn's `recorded` requests was served."""
    reason = f"all {recorded} recorded requests of turn {user_turn} were already served"
    return Divergence(
        MODEL_LANE,
        index,
        None,
        (),
        None,
        reason,
        conversation_turn=user_turn,
        turn_request=replayed,
        shape=(recorded, replayed),
    )


def explain(
    index: int,
    turn_position: int,
    recorded_dialect: str,
    recorded: Any,
    replayed_dialect: Dialect,
    replayed: Any,
    ignored: Sequence[FieldPath] = (),
) -> Divergence:
    """How request `index` differs from the recorded turn at `turn_position` (0-based), the
    `ignored` fields left out."""
    if recorded_dialect != replayed_dialect.name:
        envelope: tuple[str, ...] = (
            f"dialect: recorded {recorded_dialect}, replayed {replayed_dialect.name}",
        )
    else:
        envelope = tuple(_envelope_lines(replayed_dialect, recorded, replayed))
    fields = field_differences(compared(recorded, ignored), compared(replayed, ignored))
    if recorded_dialect != replayed_dialect.name:
        # Two APIs' bodies differ everywhere, field by field: the dialect line says it all.
        fields = FieldDifferences(fields.shown[:1])
    reason = EQUAL_BODIES if fields.first is None else ""
    remedy = _remedy(recorded, replayed, ignored) if not envelope else ""
    return Divergence(
        MODEL_LANE,
        index,
        turn_position + 1,
        envelope,
        fields.first,
        reason,
        remedy,
        others=fields.shown[1:],
        unshown=fields.unshown,
    )


def _remedy(recorded: Any, replayed: Any, ignored: Sequence[FieldPath]) -> str:
    """The line that answers the first difference, classified from the raw values."""
    for path, a, b in differences(
        compared(recorded, ignored), compared(replayed, ignored), exact=True
    ):
        where = format_indexed(path)
        found = classify(where, a, b, recorded_body=recorded)
        if found is None or found.line is None:
            return ""
        # An ignored field is left out of matching; anything else is also in the trace.
        again = "" if found.ignore_field else ", then record again"
        return f"declare `{found.line}` in the spec{again}"
    return ""


def _envelope_lines(dialect: Dialect, recorded: Any, replayed: Any) -> list[str]:
    a, b = dialect.envelope(recorded), dialect.envelope(replayed)
    lines = []
    if a.model != b.model:
        lines.append(f"model: recorded {_show(a.model)}, replayed {_show(b.model)}")
    if a.tools != b.tools:
        added = [t for t in b.tools if t not in a.tools]
        removed = [t for t in a.tools if t not in b.tools]
        parts = [f"added {', '.join(added)}"] if added else []
        parts += [f"removed {', '.join(removed)}"] if removed else []
        lines.append(f"tools: {'; '.join(parts) or 'same names, different order'}")
    if a.roles != b.roles:
        lines.append(
            f"messages: recorded {len(a.roles)} ({' '.join(a.roles)}), "
            f"replayed {len(b.roles)} ({' '.join(b.roles)})"
        )
    return lines


def first_difference(recorded: Any, replayed: Any) -> str | None:
    """`path: recorded X, replayed Y` for the first place two JSON values differ, else None."""
    found = find_difference(recorded, replayed)
    return None if found is None else str(found)


def find_difference(recorded: Any, replayed: Any) -> Difference | None:
    """The first place two JSON values differ, compared exactly (key order and the types of
    numbers and booleans count, as they do for matching); None when they are equal."""
    return next(_all(recorded, replayed, inside_json=False), None)


@dataclass(frozen=True, slots=True)
class FieldDifferences(Sequence[Difference]):
    """Every field at which two bodies differ, the first `SHOWN_FIELDS` of them shown (a
    sequence of those shown, the first one first)."""

    shown: tuple[Difference, ...] = ()
    unshown: int = 0
    """How many more differing fields there are beyond `shown`."""

    @overload
    def __getitem__(self, index: int) -> Difference: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Difference]: ...
    def __getitem__(self, index: int | slice) -> Difference | Sequence[Difference]:
        return self.shown[index]

    def __len__(self) -> int:
        return len(self.shown)

    @property
    def first(self) -> Difference | None:
        return self.shown[0] if self.shown else None

    def lines(self) -> list[str]:
        more = [f"... and {self.unshown} more differing fields"] if self.unshown else []
        return [str(difference) for difference in self.shown] + more


SHOWN_FIELDS = 10
"""A renamed argument is two fields (one gone, one new) and a reworded prompt one; past ten,
more lines bury the ones that explain it, so the rest are counted."""


def field_differences(recorded: Any, replayed: Any, limit: int = SHOWN_FIELDS) -> FieldDifferences:
    """Every place two JSON values differ, compared as `find_difference` compares them, in
    body order; descending into tool-call arguments, so a renamed argument names both its old
    and its new key. Divergences and `record --diff` both word request changes with this."""
    shown: list[Difference] = []
    unshown = 0
    for found in _all(recorded, replayed, inside_json=False):
        if len(shown) < limit:
            shown.append(found)
        else:
            unshown += 1
    return FieldDifferences(tuple(shown), unshown)


def _all(recorded: Any, replayed: Any, inside_json: bool) -> Iterator[Difference]:
    for path, a, b in differences(recorded, replayed, exact=True):
        # Argument paths read like assertion paths (`passengers.0.name`), body paths like the
        # wire (`messages[1]`).
        where = format_path(path) if inside_json else format_indexed(path)
        if isinstance(a, dict) and isinstance(b, dict):  # `exact` yields two dicts: reordered
            yield Difference(where or "(body)", str(list(a)), str(list(b)), REORDERED)
        else:
            yield from _leaf(where or ("(arguments)" if inside_json else ""), a, b)


def _leaf(where: str, recorded: Any, replayed: Any) -> Iterator[Difference]:
    if isinstance(recorded, str) and isinstance(replayed, str):
        inner = _json_inside(where, recorded, replayed)
        if inner is not None:
            yield from inner
            return
        if max(len(recorded), len(replayed)) > _SHOWN:
            yield _text_window(where, recorded, replayed)
            return
    yield Difference(where, _show(recorded), _show(replayed))


def _json_inside(where: str, recorded: str, replayed: str) -> list[Difference] | None:
    """Diff two strings that both hold JSON containers (tool-call arguments) field by field."""
    try:
        a, b = read_json(recorded), read_json(replayed)
    except ValueError:
        return None
    if not isinstance(a, dict | list) or not isinstance(b, dict | list):
        return None
    inner = [replace(found, path=f"{where}: {found.path}") for found in _all(a, b, True)]
    if not inner:
        # Equal parsed values with different bytes (spacing, key order) still diverge: say so.
        return [Difference(where, _show(recorded), _show(replayed), SAME_JSON)]
    return inner


def _text_window(where: str, recorded: str, replayed: str) -> Difference:
    """Two long texts (an edited prompt) shown around where they first differ."""
    start = next(
        (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
        min(len(recorded), len(replayed)),
    )
    lo = max(0, start - 40)

    def window(text: str) -> str:
        part = text[lo : lo + _SHOWN // 2]
        return (
            (CUT if lo else "")
            + json.dumps(part, ensure_ascii=False)
            + (CUT if lo + _SHOWN // 2 < len(text) else "")
        )

    note = f"texts differ from character {start}"
    return Difference(where, window(recorded), window(replayed), note)


def _show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return clip(text, _SHOWN - 1) if len(text) > _SHOWN else text

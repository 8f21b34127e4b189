"""Why a replayed request matches no recorded turn, in the order a reviewer wants to read it.

Envelope first (dialect, model, tool names, message roles and count), because "you added a
tool" is a one-line answer where a byte diff of two long prompts is unreadable; then the first
JSON path whose values differ, with both values. Tool-call `arguments` are JSON inside a string,
so the diff descends into them when both sides parse, and shows them whole when not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from flowproof.dialects.base import Dialect, without_transport

_MISSING = object()
_SHOWN = 160


@dataclass(frozen=True, slots=True)
class Divergence:
    """A replayed request that no unconsumed recorded turn serves."""

    request_number: int
    """1-based arrival number of the request that diverged."""
    recorded_turn: int | None
    """1-based number of the recorded turn it was compared with (None: none was left)."""
    envelope: tuple[str, ...]
    """Envelope differences, one line each."""
    detail: str
    """The first differing path with both values, or why there is nothing to compare."""

    @property
    def headline(self) -> str:
        if self.recorded_turn is None:
            return f"request {self.request_number} is an extra model call: {self.detail}"
        return (
            f"request {self.request_number} matches no recorded turn "
            f"(compared with recorded turn {self.recorded_turn})"
        )

    def render(self) -> str:
        lines = [self.headline, *self.envelope]
        if self.recorded_turn is not None and self.detail not in self.envelope:
            lines.append(self.detail)
        return "\n".join(lines)


def extra_call(request_number: int, recorded_count: int) -> Divergence:
    return Divergence(
        request_number, None, (), f"all {recorded_count} recorded turns were already served"
    )


def explain(
    request_number: int,
    recorded_turn: int,
    recorded_dialect: str,
    recorded: Any,
    replayed_dialect: Dialect,
    replayed: Any,
) -> Divergence:
    if recorded_dialect != replayed_dialect.name:
        envelope: tuple[str, ...] = (
            f"dialect: recorded {recorded_dialect}, replayed {replayed_dialect.name}",
        )
    else:
        envelope = tuple(_envelope_lines(replayed_dialect, recorded, replayed))
    found = first_difference(without_transport(recorded), without_transport(replayed))
    detail = found if found is not None else "the bodies are equal (no difference found)"
    return Divergence(request_number, recorded_turn + 1, envelope, detail)


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


def first_difference(recorded: Any, replayed: Any, path: str = "") -> str | None:
    """`path: recorded X, replayed Y` for the first place two JSON values differ, else None."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in [*recorded, *(k for k in replayed if k not in recorded)]:
            found = first_difference(
                recorded.get(key, _MISSING), replayed.get(key, _MISSING), _join(path, key)
            )
            if found:
                return found
        if list(recorded) != list(replayed):
            return (
                f"{path or '(body)'}: same keys in a different order: recorded "
                f"{list(recorded)}, replayed {list(replayed)}"
            )
        return None
    if isinstance(recorded, list) and isinstance(replayed, list):
        for index in range(max(len(recorded), len(replayed))):
            a = recorded[index] if index < len(recorded) else _MISSING
            b = replayed[index] if index < len(replayed) else _MISSING
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None
    if recorded == replayed and type(recorded) is type(replayed):
        return None
    if isinstance(recorded, str) and isinstance(replayed, str):
        inner = _json_inside(recorded, replayed)
        if inner is not None:
            return f"{path}: {inner}"
        if max(len(recorded), len(replayed)) > _SHOWN:
            return f"{path}: {_text_window(recorded, replayed)}"
    return f"{path}: recorded {_show(recorded)}, replayed {_show(replayed)}"


def _json_inside(recorded: str, replayed: str) -> str | None:
    """Diff two strings that both hold JSON containers (tool-call arguments) field by field."""
    try:
        a, b = json.loads(recorded), json.loads(replayed)
    except ValueError:
        return None
    if not isinstance(a, dict | list) or not isinstance(b, dict | list):
        return None
    found = _dotted(first_difference(a, b))
    # Equal parsed values with different bytes (spacing, key order) still diverge: say so.
    return (
        found
        or f"same JSON, different bytes: recorded {_show(recorded)}, replayed {_show(replayed)}"
    )


def _dotted(found: str | None) -> str | None:
    """Argument paths read like assertion paths: `passengers.0.name`, not `passengers[0].name`."""
    if found is None:
        return None
    path, _, rest = found.partition(": ")
    return f"{path.replace('[', '.').replace(']', '').lstrip('.') or '(arguments)'}: {rest}"


def _text_window(recorded: str, replayed: str) -> str:
    """Two long texts (an edited prompt) shown around where they first differ."""
    start = next(
        (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
        min(len(recorded), len(replayed)),
    )
    lo = max(0, start - 40)

    def window(text: str) -> str:
        part = text[lo : lo + _SHOWN // 2]
        return (
            ("…" if lo else "")
            + json.dumps(part, ensure_ascii=False)
            + ("…" if lo + _SHOWN // 2 < len(text) else "")
        )

    return (
        f"texts differ from character {start}: recorded {window(recorded)}, "
        f"replayed {window(replayed)}"
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"

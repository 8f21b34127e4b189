"""Lane kinds: the one registry of what each kind of lane is, and the plugin interface.

A lane's kind (the part of its name before the first dot: `model`, `mcp`) owns everything
flowproof does with the lane's entries, in one object: how an entry is written to and read
from a trace file, how a loaded lane is checked, which bodies the secret scan reads, the run
record's timeline rows (their type, and their rewrite from older record formats), the reports'
view of the lane, what `record --diff` says changed, what it adds to the trajectory the
assertions judge, and which lane a `<server>/<tool>` step reports. A kind registers by
subclassing `LaneKind` once, in its own module.

This module sits low (trace/, runrecord/ and report/ may ask it) and names no kind's module
in an import statement: each built-in kind is registered once, in `BUILT_IN_KINDS`, by the
module that defines it (imported on the first lookup, so reading a trace never needs the
caller to have imported the right boundary first, and start-up pays for it only when it must)
and, when its entries have run-record rows of their own, by that row type (which the run
record's model gathers when it is defined; runrecord/model.py).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from flowproof.core.lanes import MODEL_LANE
from flowproof.core.registry import refuse_clash
from flowproof.guards.spellings import clip

if TYPE_CHECKING:
    from flowproof.assertions.secrets import Body
    from flowproof.assertions.trajectory import ExecutedCall, Trajectory
    from flowproof.trace.model import Lane


@dataclass(frozen=True, slots=True)
class KindRegistration:
    """Where a lane kind lives: all flowproof needs to find it."""

    kind: str
    module: str
    """The module whose import registers the kind (it defines the `LaneKind` subclass)."""
    rows: str | None = None
    """`module:Class` of the run record's row type for the kind's entries, when they have rows
    of their own; None when they are read as model turns' rows. Named apart from the kind's
    behaviour: the run record's model gathers it when it is defined, and a kind's behaviour
    reads the run record's model in turn."""


BUILT_IN_KINDS = (
    KindRegistration(MODEL_LANE, "flowproof.proxy.kind"),
    KindRegistration("mcp", "flowproof.mcp.kind", rows="flowproof.mcp.rows:McpTimelineEntry"),
)
"""The built-in lane kinds, the model's first. A new kind is one more line here."""

Document = dict[str, Any]


class LaneKind:
    """What flowproof does with one kind of lane. Subclasses register by `kind`."""

    kind: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        existing = _REGISTRY.get(cls.kind)
        refuse_clash("lane kind", cls.kind, type(existing) if existing else None, cls)
        _REGISTRY[cls.kind] = cls()

    def encode(self, entry: Any) -> Document:
        """One entry as the JSON object a trace file holds."""
        raise NotImplementedError

    def decode(self, data: Any, where: str) -> Any:
        """One entry from its JSON (`where` names its place, for errors: raise Malformed)."""
        raise NotImplementedError

    def check(self, lane: Lane, source: str) -> None:
        """Refuse a loaded lane this flowproof cannot serve (raises TraceError)."""

    def bodies(self, lane: Lane) -> list[Body]:
        """Every body the secret scan reads, labelled for its messages."""
        raise NotImplementedError

    def timeline(self, lane: Lane) -> Sequence[Any]:
        """The run record's rows for the lane's entries (of the row type its registration
        names, or model turns' rows), in the lane's order."""
        raise NotImplementedError

    def migrate_rows(self, rows: list[Document], to_format: int) -> list[Document]:
        """This kind's timeline rows of an older run record (every lane's, in the record's
        order), brought to format `to_format` from the one before it; one row out per row in."""
        return rows

    def lane_view(self, lane: str, rows: Sequence[Any], diverged: bool) -> Any:
        """The HTML and markdown reports' view of one lane of this kind (report/view.py's
        lane views), from its run-record rows (`rows` is empty for a lane that diverged on its
        first request); None when the kind's rows are not drawn apart from the model turns."""
        return None

    def changes(self, old: Sequence[Any], new: Sequence[Any]) -> list[str]:
        """What a re-record changed, for the reviewer; empty when nothing did."""
        raise NotImplementedError

    def trajectory(self, lane: Lane) -> Trajectory | None:
        """The trajectory this lane establishes, if it is the one the assertions read."""
        return None

    def executed(self, lane: Lane) -> list[ExecutedCall]:
        """The tool calls this lane saw EXECUTED (a tool boundary), if it is one."""
        return []

    def boundary_calls(self, lane: Lane) -> int:
        """How many requests the agent made across this tool boundary (the summary's count)."""
        return 0

    def tool_lane(self, server: str) -> str | None:
        """The lane a `<server>/<tool>` step judges, when this kind is the tool boundary such
        steps name; None for every other kind."""
        return None


_REGISTRY: dict[str, LaneKind] = {}
_loaded = False


def kind_named(kind: str) -> LaneKind | None:
    """The registered kind `kind`, the built-in kinds imported first; None when unknown."""
    _load_builtin_kinds()
    return _REGISTRY.get(kind)


def known_kinds() -> list[str]:
    """Every registered kind, the model's first (as error messages list them)."""
    _load_builtin_kinds()
    return sorted(_REGISTRY, key=lambda kind: kind != MODEL_LANE)


def tool_lane(server: str) -> str | None:
    """The lane of `server` at the tool boundary `<server>/<tool>` steps judge (the control
    lane such a step reports); None when no registered kind claims it."""
    return next(
        (lane for kind in known_kinds() if (lane := _REGISTRY[kind].tool_lane(server))), None
    )


def row_types() -> list[tuple[str, type]]:
    """(kind, row type) of every built-in kind whose entries have run-record rows of their own,
    in registration order; imports the row types' modules only."""
    found = []
    for registration in BUILT_IN_KINDS:
        if registration.rows is not None:
            module, _, name = registration.rows.partition(":")
            found.append((registration.kind, getattr(importlib.import_module(module), name)))
    return found


def _load_builtin_kinds() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for registration in BUILT_IN_KINDS:
            importlib.import_module(registration.module)


class Malformed(Exception):
    """A field of the wrong type or missing; the trace codec turns it into a TraceError."""


_JSON_TYPES: dict[type, str] = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}

T = TypeVar("T")


def expect(value: Any, expected: type[T], where: str) -> T:
    """`value` when it is of JSON type `expected`; Malformed naming `where` otherwise."""
    if isinstance(value, expected) and not (expected is int and isinstance(value, bool)):
        return value
    shown = json.dumps(value, ensure_ascii=False)
    shown = clip(shown, 40)
    raise Malformed(
        f"{where} is {shown} ({_JSON_TYPES.get(type(value), 'a value')}), not "
        f"{'an integer' if expected is int else _JSON_TYPES[expected]}"
    )


def field(document: Document, key: str, where: str) -> Any:
    """`document[key]`; Malformed naming `where` when it is missing."""
    if key not in document:
        raise Malformed(f"{where} has no {key!r} field")
    return document[key]

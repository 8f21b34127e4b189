"""What a trace holds: named lanes of recorded entries. Bodies only: no headers, no keys, ever.

A lane is one boundary's traffic in arrival order. The model boundary is the `model` lane, whose
entries are Turns; the tool boundary adds one lane per MCP server (`mcp.<name>`) beside it. Each
lane kind brings its own entry type, codec and matching rule, registered once (trace/kinds.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flowproof.core.lanes import MODEL_LANE
from flowproof.dialects import dialect_named
from flowproof.dialects.base import Dialect


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """What a turn's bodies say, as its dialect reads them: parsed once, read by the
    trajectory, the run record's timeline and `record --diff` alike."""

    tool_calls: tuple[tuple[str, str], ...]
    """(name, raw argument string) of every tool call the model asked for."""
    reply: str | None
    """The assistant's text; None when the response is a tool call."""
    tool_results: tuple[tuple[str, str], ...]
    """(tool name, content) of the results the request reports back, as the model saw them."""
    system_prompt: str
    """The request's system prompt: the turns of one conversation share it."""
    offered_tools: tuple[str, ...] = ()
    """Names of the tools the request offers the model, in its order."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One model call: what the agent sent (after tool-result substitution) and what came back."""

    dialect: str
    """The wire API the turn was spoken in, e.g. `openai_chat`."""
    request: Any
    """The request body as parsed JSON, key order kept (text when it was not JSON)."""
    response: Any
    """The response body as parsed JSON, key order kept."""
    request_sha256: str | None = field(default=None, compare=False)
    """The digest of the bytes the agent sent for this turn at record (matching/exact.py), so
    replay can serve the same bytes without reading them; None for a turn recorded before
    digests, or whose request record changed (a mocked tool result). Not part of the turn's
    value: a re-serialisation by the agent changes no answer a reviewer needs to read."""
    conversation_turn: int | None = None
    """The user turn (1-based) of the flow's `conversation:` during which the agent sent this
    request; None in a single-turn flow. Replay serves a turn only within its user turn."""
    _facts: TurnFacts | None = field(default=None, init=False, repr=False, compare=False)
    """The parsed facts, filled on first read; not part of the turn's value or its trace."""

    @property
    def facts(self) -> TurnFacts | None:
        """What the bodies say, parsed on first read and kept; None for a dialect this
        flowproof does not know (a trace may name one; the caller says what that means)."""
        if self._facts is None:
            dialect = dialect_named(self.dialect)
            if dialect is None:
                return None
            # The turn is a frozen value: its bodies never change, so the parse is kept.
            object.__setattr__(self, "_facts", _read_facts(dialect, self.request, self.response))
        return self._facts


@dataclass(frozen=True, slots=True)
class Lane:
    """One boundary's recorded traffic."""

    name: str
    """`model`, or `<kind>.<name>` for a lane of which a flow may have several."""
    entries: tuple[Any, ...]
    """The lane kind's entries (Turns for `model`), in the order they arrived at record."""

    @property
    def kind(self) -> str:
        """The part before the first dot: what kind of boundary the lane records."""
        return self.name.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class Trace:
    """A recorded flow: its lanes, the model lane first."""

    lanes: tuple[Lane, ...]
    flowproof_version: str
    """The flowproof that wrote the trace (informational; the format version decides reading)."""
    normalized_by_default: tuple[str, ...] = ()
    """The facts normalised at record without being declared (`cwd`, `home`, `tmpdir`), which
    replay normalises again. A trace from before the defaults lists none: it is matched with
    its spec's declared facts alone, exactly as it was recorded."""
    unedited: bool = field(default=True, compare=False)
    """Whether the file is as flowproof wrote it (trace/codec.py `file_sha256`): only then do
    its turns' request digests vouch for their stored requests, and replay may serve a request
    by its bytes alone. A trace built in memory is as written."""

    @classmethod
    def from_turns(cls, turns: Sequence[Turn], flowproof_version: str) -> Trace:
        """A trace of model turns alone."""
        return cls((Lane(MODEL_LANE, tuple(turns)),), flowproof_version)

    def lane(self, name: str) -> tuple[Any, ...]:
        """The entries of lane `name`; none when the trace has no such lane."""
        return next((lane.entries for lane in self.lanes if lane.name == name), ())

    @property
    def turns(self) -> tuple[Turn, ...]:
        """The model lane's turns."""
        return self.lane(MODEL_LANE)


def _read_facts(dialect: Dialect, request: Any, response: Any) -> TurnFacts:
    return TurnFacts(
        tool_calls=tuple(dialect.tool_calls(response)),
        reply=dialect.reply_text(response),
        tool_results=tuple(dialect.latest_tool_results(request)),
        system_prompt=dialect.system_prompt(request),
        offered_tools=dialect.envelope(request).tools,
    )

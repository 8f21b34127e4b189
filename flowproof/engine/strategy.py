"""Record and replay: the two ways a flow meets its boundaries, as two strategies.

Each knows the backend the proxy answers from (an async context manager that closes itself),
how many model turns the flow is expected to serve, and what it does once the flow is judged
(record mints the trace; replay writes nothing). `run_flow` asks; it never checks the mode.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from flowproof._version import __version__
from flowproof.core.errors import ConfigError, TraceError
from flowproof.core.mocks import ToolMocks
from flowproof.core.words import plural
from flowproof.engine.context import FlowContext
from flowproof.engine.lanes import check_lanes
from flowproof.engine.outcome import Mode
from flowproof.live.conversation import turn_counts
from flowproof.live.traffic import Traffic
from flowproof.matching.match import matcher_for
from flowproof.matching.rules import STRICT, RequestRules
from flowproof.mcp.boundary import McpBoundary, RecordSide, ReplaySide, ToolSide
from flowproof.proxy import DEFAULT_UPSTREAM_TIMEOUT
from flowproof.proxy.backend import Backend
from flowproof.proxy.replay import ReplayBackend
from flowproof.spec.refs import resolve
from flowproof.trace.model import Trace
from flowproof.trace.store import load_trace, trace_path_for, write_trace

if TYPE_CHECKING:  # record only: a replay loads neither the forwarding backend nor the lint
    from collections.abc import Callable

    from flowproof.proxy.forward import Upstream
    from flowproof.trace.lint import Rules

DEBUG_REPLAY_VARIABLE = "FLOWPROOF_DEBUG_REPLAY"
"""Set (to anything) in flowproof's environment, a replay's record notes how many turns were
served by their bytes alone (matching/exact.py): a debugging aid, and what tests check."""


class Strategy(Protocol):
    mode: Mode
    previous: Trace | None
    """The trace already beside the spec (replay serves it; record may replace it)."""

    def tool_side(self, environ: Mapping[str, str], server_environ: Mapping[str, str]) -> ToolSide:
        """How the MCP servers are served: from the recorded lanes (replay), or by starting or
        dialing each real server (record; `${VAR}` in its `command:`/`url:` resolved from
        `environ`, a stdio server's process given `server_environ`)."""
        ...

    def cannot_start(self) -> str | None:
        """Why the flow cannot run at all (a flow failure), or None."""

    def backend(
        self, traffic: Traffic, mocks: ToolMocks, rules: RequestRules = STRICT
    ) -> AbstractAsyncContextManager[Backend]:
        """`rules`: the flow's `normalize:` and `ignore_fields:` (matching/rules.py)."""
        ...

    @property
    def expected_turns(self) -> int | None:
        """Model turns the flow must serve; None when any number is fine."""

    def tool_boundary_reasons(self, boundary: McpBoundary, reasons: list[str]) -> list[str]:
        """Why the MCP boundary failed once the agent has gone, given the boundary `reasons`
        found so far: servers never contacted at record (a trace without their lanes would
        replay nothing), calls left unserved at replay (only when nothing failed before, since
        a flow cut short leaves calls unserved as a matter of course)."""

    def trace_findings(self, traffic: Traffic, rules: Callable[[], Rules]) -> list[str]:
        """What `flowproof trace lint` would find in the trace this flow is about to write
        (record), as failure reasons, under the rules `rules()` gives (worked out only by a
        strategy that lints); nothing at replay, which writes no trace."""

    @property
    def recorded_defaults(self) -> tuple[str, ...] | None:
        """The facts the trace being replayed was normalised with by default; None at record,
        where the spec's defaults apply (matching/normalize.py)."""
        ...

    def finish(
        self,
        traffic: Traffic,
        passed: bool,
        never_stored: Mapping[str, str],
        normalized_by_default: tuple[str, ...] = (),
    ) -> Path | None:
        """After judging: the trace written, if any. `never_stored` maps each variable whose
        value must not reach a trace to that value; `normalized_by_default` is written in it."""


@dataclass(slots=True)
class Replay:
    trace_path: Path
    spec_path: Path
    previous: Trace | None
    mode: Mode = Mode.REPLAY
    user_turns: int = 0
    """The user turns of the flow's `conversation:`; 0 for a single-turn flow."""
    counts_exact: bool = False
    """FLOWPROOF_DEBUG_REPLAY was set: say how many turns were served by their bytes."""

    def tool_side(self, environ: Mapping[str, str], server_environ: Mapping[str, str]) -> ToolSide:
        if self.previous is None:
            return ReplaySide.nothing_recorded()
        return ReplaySide(self.previous)

    def cannot_start(self) -> str | None:
        if self.previous is None:
            return f"no trace at {self.trace_path}; run `flowproof record {self.spec_path}` first"
        recorded = max((turn.conversation_turn or 0 for turn in self.previous.turns), default=0)
        if recorded != self.user_turns:
            now = (
                f"has {self.user_turns} conversation turns"
                if self.user_turns
                else "is a single-turn flow"
            )
            return (
                f"{self.trace_path} was recorded {_turns_said(recorded)} and the flow now {now}; "
                f"run `flowproof record {self.spec_path}` again"
            )
        return None

    @asynccontextmanager
    async def backend(
        self, traffic: Traffic, mocks: ToolMocks, rules: RequestRules = STRICT
    ) -> AsyncIterator[Backend]:
        assert self.previous is not None  # cannot_start() said so
        conversation = traffic.conversation
        # A trace edited since record may hold a request its digest no longer vouches for.
        matcher = matcher_for(
            self.previous.turns,
            rules.ignored,
            (lambda: conversation.current) if conversation is not None else None,
            exact=self.previous.unedited,
        )
        backend = ReplayBackend(matcher, mocks, traffic, rules)
        try:
            yield backend
        finally:
            if conversation is not None:
                _check_shape(self.previous, traffic)
            if self.counts_exact:
                traffic.notes.append(
                    f"byte-exact replay: {backend.served_exact} of {matcher.served} turns "
                    "served by their bytes, the rest read and matched"
                )

    @property
    def expected_turns(self) -> int | None:
        return len(self.previous.turns) if self.previous else 0

    def tool_boundary_reasons(self, boundary: McpBoundary, reasons: list[str]) -> list[str]:
        return [] if reasons else boundary.unserved()

    def trace_findings(self, traffic: Traffic, rules: Callable[[], Rules]) -> list[str]:
        return []

    @property
    def recorded_defaults(self) -> tuple[str, ...] | None:
        return self.previous.normalized_by_default if self.previous else None

    def finish(
        self,
        traffic: Traffic,
        passed: bool,
        never_stored: Mapping[str, str],
        normalized_by_default: tuple[str, ...] = (),
    ) -> Path | None:
        return None


def _turns_said(user_turns: int) -> str:
    return f"with {user_turns} conversation turns" if user_turns else "as a single-turn flow"


def _check_shape(recorded: Trace, traffic: Traffic) -> None:
    """A replayed user turn that sent fewer requests than its recording fails the flow, naming
    the turn (one that sent more diverged at its extra request). Only when nothing failed
    before, and every user turn was reached: an agent cut short, or gone before a turn, is
    said so otherwise (engine/run.py)."""
    conversation = traffic.conversation
    if conversation is None or traffic.divergence is not None or traffic.failures:
        return
    if conversation.unanswered() is not None:
        return
    counts = turn_counts(recorded.turns)
    for number, replayed in enumerate(conversation.requests, 1):
        if replayed != counts.get(number, 0):
            traffic.fail(
                f"conversation shape changed at turn {number}: recorded "
                f"{plural(counts.get(number, 0), 'request')}, replayed {replayed}"
            )
            return


@dataclass(slots=True)
class Record:
    trace_path: Path
    upstream: Upstream
    previous: Trace | None
    mode: Mode = Mode.RECORD
    keep_matching: bool = False
    """Serve requests that match the previous trace from it; forward only the rest."""
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT
    """Seconds one upstream answer may take, whole."""

    def tool_side(self, environ: Mapping[str, str], server_environ: Mapping[str, str]) -> ToolSide:
        return RecordSide(environ, server_environ, self.upstream.reach)

    def cannot_start(self) -> str | None:
        return None

    @asynccontextmanager
    async def backend(
        self, traffic: Traffic, mocks: ToolMocks, rules: RequestRules = STRICT
    ) -> AsyncIterator[Backend]:
        from flowproof.proxy.forward import ForwardBackend
        from flowproof.proxy.keep import KeepMatchingBackend

        forward = ForwardBackend(self.upstream, mocks, traffic, rules, self.upstream_timeout)
        placeholder = _hold_place(self.trace_path)
        try:
            if self.keep_matching and self.previous is not None:
                conversation = traffic.conversation  # a conversation keeps turns by user turn
                current = (lambda: conversation.current) if conversation is not None else None
                kept = matcher_for(self.previous.turns, rules.ignored, current)
                yield KeepMatchingBackend(kept, forward, mocks, traffic, rules)
            else:
                yield forward
        finally:
            await forward.close()
            if placeholder:
                placeholder.unlink(missing_ok=True)

    @property
    def expected_turns(self) -> int | None:
        return None

    def tool_boundary_reasons(self, boundary: McpBoundary, reasons: list[str]) -> list[str]:
        return boundary.never_contacted()

    def trace_findings(self, traffic: Traffic, rules: Callable[[], Rules]) -> list[str]:
        from flowproof.trace.lint import lint_lanes

        findings = lint_lanes(str(self.trace_path), traffic.snapshot(), rules())
        return [
            f"the trace would hold {finding.rule} at {finding.path}, so it was not written: "
            f"{finding.remedy}"
            for finding in findings
        ]

    @property
    def recorded_defaults(self) -> tuple[str, ...] | None:
        return None

    def finish(
        self,
        traffic: Traffic,
        passed: bool,
        never_stored: Mapping[str, str],
        normalized_by_default: tuple[str, ...] = (),
    ) -> Path | None:
        """Mint the trace, only for a passing record. The secret scan ran before this (a leak
        fails the flow), and write_trace refuses a secret value once more."""
        if not passed:
            return None
        trace = Trace(traffic.snapshot(), __version__, normalized_by_default)
        try:
            write_trace(self.trace_path, trace, secrets=never_stored)
        except ConfigError as exc:  # the path cannot be written: say what that cost
            raise ConfigError(f"{exc}; the flow passed, but its trace was not written") from None
        return self.trace_path


def _hold_place(trace_path: Path) -> Path | None:
    """An empty file where a first record's trace will be, while the agent runs (None when a
    trace is there already, or the folder cannot take one). Agents that show the model their
    project (Gemini CLI lists the working tree in its first prompt) then see at record the
    files they will see at every replay, the trace among them; `finish` writes the real
    trace after the placeholder is gone."""
    try:
        trace_path.touch(exist_ok=False)
    except OSError:
        return None
    return trace_path


def strategy_for(
    mode: Mode,
    context: FlowContext,
    keep_matching: bool = False,
    upstream_timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
) -> Strategy:
    loaded, credentials = context.loaded, context.record_keys
    trace_path = trace_path_for(loaded.path)
    if mode is Mode.REPLAY:
        previous = _existing(trace_path, credentials)
        return Replay(
            trace_path,
            loaded.path,
            previous,
            user_turns=len(loaded.conversation),
            counts_exact=bool(context.environ.get(DEBUG_REPLAY_VARIABLE)),
        )
    from flowproof.proxy.forward import Upstream  # record only: replay has no client

    # A wrong SSL_CERT_FILE, or a proxy record cannot use, is a setting to fix before any agent.
    upstream = Upstream.from_environ(context.environ)
    try:
        previous = _existing(trace_path, credentials)
    except TraceError:
        previous = None  # a record may replace an unreadable trace; it only counts as absent
    upstream.reach.routes.check([*upstream.configured_urls(), *_mcp_urls(context)])
    return Record(
        trace_path,
        upstream,
        previous,
        keep_matching=keep_matching,
        upstream_timeout=upstream_timeout,
    )


def _mcp_urls(context: FlowContext) -> list[str]:
    urls = []
    for server in context.loaded.spec.mcp:
        if server.url:
            try:
                urls.append(resolve(server.url, context.environ))
            except ConfigError:
                continue  # an unset ${VAR} is reported where the server is opened
    return urls


def _existing(path: Path, credentials: Mapping[str, str]) -> Trace | None:
    if not path.exists():
        return None
    trace = load_trace(path, credentials=credentials)
    check_lanes(trace, str(path))
    return trace

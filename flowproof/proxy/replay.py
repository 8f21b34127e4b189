"""ReplayBackend: answers from the cassette. It has no network client, and the lint rule in
pyproject.toml (TID251) keeps it that way.

A request is normalised (the flow's `normalize:` facts become placeholders) before it is
matched, exactly as record normalised it before storing; the recorded response is served with
its placeholders turned back into today's values.

A request whose bytes are the very bytes a turn was recorded from is served that turn without
being read (`answer_exact`, matching/exact.py says when that is provably what the path above
would do), its answer rendered from the bytes by proxy/render.py, as the app renders what it
reads: the verdict and the response are the same either way. What that works out about a turn
is the backend's (`ExactAnswers`, by turn index); the trace's turns carry nothing of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import ToolMocks
from flowproof.dialects.base import Dialect, without_transport
from flowproof.live.traffic import NO_RETRY, Answer, Traffic
from flowproof.matching import divergence
from flowproof.matching.exact import FastGate, is_plain, request_digest
from flowproof.matching.match import ConversationMatcher, TurnMatcher
from flowproof.matching.normalize import Normalizer
from flowproof.matching.rules import STRICT, RequestRules
from flowproof.proxy import render
from flowproof.proxy.backend import ModelCall, Served
from flowproof.proxy.h1 import Request
from flowproof.trace.model import Turn

DIVERGENCE = "flowproof_replay_divergence"


class ExactAnswers:
    """What serving a trace's turns by their bytes works out, by turn index, on each turn's
    first serve: whether record normalised nothing in its stored request (`plain`), and the
    turn and response served (`served`, for the bytes of the turn's digest and today's values).
    It holds for the turns and the rules it was first asked with.

    Each replay backend has one of its own. A flow serves each turn at most once, so within a
    flow nothing is asked twice; a caller that replays the same turns under the same rules
    again and again hands each of its backends the same one (bench/proxy_server.py, one flow
    per client, over one trace)."""

    def __init__(self) -> None:
        self._plain: dict[int, bool] = {}
        self._served: dict[int, Served] = {}

    def plain(self, index: int, turn: Turn) -> bool:
        found = self._plain.get(index)
        if found is None:
            found = self._plain[index] = is_plain(turn)
        return found

    def served(self, index: int, work_out: Callable[[], Served]) -> Served:
        found = self._served.get(index)
        if found is None:
            found = self._served[index] = work_out()
        return found


class ReplayBackend:
    """Serves the model lane. `matcher` is that lane's matching rule over the recorded turns,
    handed in by the engine (engine/strategy.py picks the rule the lane follows)."""

    def __init__(
        self,
        matcher: TurnMatcher | ConversationMatcher,
        mocks: ToolMocks,
        traffic: Traffic,
        rules: RequestRules = STRICT,
        exact: ExactAnswers | None = None,
    ) -> None:
        self.matcher = matcher
        self.mocks = mocks
        self.traffic = traffic
        self.normalizer = rules.normalizer
        self.gate = FastGate.for_flow(self.normalizer.spellings, mocked=bool(mocks))
        self.exact = ExactAnswers() if exact is None else exact
        """What serving the matcher's turns by their bytes works out, by turn index."""
        self.served_exact = 0
        """Requests served by their bytes alone (the rest were read and matched)."""

    def answer_exact(self, dialect: Dialect, path: str, sent: Request) -> Served | None:
        """The turn recorded from these very bytes, served without reading them; None when
        the request must be read (`answer`), which then decides exactly as it always has."""
        if self.traffic.divergence is not None or self.traffic.failures:
            return None  # `answer` refuses, and says why
        if not self.gate.open:
            return None
        raw = sent.body
        digest = request_digest(dialect.name, path, sent.query_string, raw)
        index = self.matcher.claim_exact(dialect.name, digest, lambda at: self._admits(at, raw))
        if index is None:
            return None
        self.served_exact += 1
        return self.exact.served(index, lambda: self._served(dialect, path, sent, index))

    def _admits(self, index: int, raw: bytes) -> bool:
        """Whether normalising changes nothing, for turn `index` at record and for the parse
        of `raw` now: then equal bytes mean an equal matched request (matching/exact.py)."""
        return self.exact.plain(index, self.matcher.turns[index]) and self.gate.admits(raw)

    def _served(self, dialect: Dialect, path: str, sent: Request, index: int) -> Served:
        """What serving turn `index` to these bytes gives: the turn the slow path would write,
        and the response the app would render for what it read."""
        recorded = self.matcher.turns[index]
        # The slow path's entry is Turn(dialect, the request as matched, the recorded
        # response); the request as matched is the recorded request (exact.py), so the turn is
        # the recorded one without its digest, as a replayed turn never carries one.
        turn = Turn(recorded.dialect, recorded.request, recorded.response)
        answered = Answer(200, self.normalizer.from_placeholders(recorded.response))
        route = dialect.route(path, sent.query_string)
        return Served(turn, render.for_bytes(dialect, route, sent.body, answered))

    async def answer(self, call: ModelCall) -> Answer:
        """`method` and the route's query are not part of matching (a trace holds bodies only;
        what the route folds into the body is)."""
        dialect, request = call.dialect, call.body
        number = len(self.traffic.requests)
        if self.traffic.divergence is not None or self.traffic.failures:
            # Fail fast: after the first bad turn, later turns say nothing about the agent.
            return _refuse(
                dialect, "flowproof: this replay has already failed; see the flowproof report"
            )
        try:
            request = matchable(dialect, request, self.mocks, self.normalizer)
        except ToolResultsExhausted as exc:
            self.traffic.fail(str(exc))
            return _refuse(dialect, f"flowproof: {exc}")
        index = self.matcher.claim(dialect.name, request)
        if index is None:
            found = self._explain(number, dialect, request)
            self.traffic.diverge(found)
            return _refuse(dialect, f"flowproof replay divergence: {found.render()}")
        return served(dialect, request, self.matcher.turns[index], self.normalizer)

    def _explain(self, number: int, dialect: Dialect, request: Any) -> divergence.Divergence:
        closest = self.matcher.closest(dialect.name, request)
        conversation = self.traffic.conversation
        if isinstance(self.matcher, ConversationMatcher) and conversation is not None:
            # Named by its user turn: "turn 2, request 1 ...", or the turn's shape changed.
            user_turn = self.matcher.user_turn
            in_turn = conversation.requests[user_turn - 1] + 1
            if closest is None:
                recorded = self.matcher.recorded_in(user_turn)
                return divergence.shape_changed(number, user_turn, recorded, in_turn)
            found = self._explained(number, closest, dialect, request)
            return replace(found, conversation_turn=user_turn, turn_request=in_turn)
        if closest is None:
            return divergence.extra_call(number, len(self.matcher.turns))
        return self._explained(number, closest, dialect, request)

    def _explained(
        self, number: int, closest: int, dialect: Dialect, request: Any
    ) -> divergence.Divergence:
        turn = self.matcher.turns[closest]
        return divergence.explain(
            number, closest, turn.dialect, turn.request, dialect, request, self.matcher.ignored
        )


def matchable(dialect: Dialect, request: Any, mocks: ToolMocks, normalizer: Normalizer) -> Any:
    """The request as it is matched against recorded turns: mocked tool results substituted,
    the flow's `normalize:` facts turned into placeholders (as record stored them). Raises
    ToolResultsExhausted when a mock's `results:` ran out."""
    return normalizer.to_placeholders(dialect.substitute_tool_results(request, mocks))


def served(dialect: Dialect, request: Any, recorded: Turn, normalizer: Normalizer) -> Answer:
    """Serve `recorded` for the matched `request`: answered with today's values, its turn the
    request as it came (transport keys out) with the recorded response."""
    turn = Turn(dialect.name, without_transport(request), recorded.response)
    return Answer(200, normalizer.from_placeholders(recorded.response), turn=turn)


def _refuse(dialect: Dialect, message: str) -> Answer:
    # 4xx plus x-should-retry: false, so the SDK neither retries nor backs off.
    return Answer(400, dialect.error_body(message, DIVERGENCE), dict(NO_RETRY))

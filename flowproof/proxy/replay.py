"""ReplayBackend: answers from the cassette. It has no network client, and the lint rule in
pyproject.toml (TID251) keeps it that way.

A request is normalised (the flow's `normalize:` facts become placeholders) before it is
matched, exactly as record normalised it before storing; the recorded response is served with
its placeholders turned back into today's values."""

from __future__ import annotations

from typing import Any

from flowproof.dialects.base import Dialect, without_transport
from flowproof.errors import ToolResultsExhausted
from flowproof.matching import divergence
from flowproof.matching.match import TurnMatcher
from flowproof.matching.normalize import Normalizer
from flowproof.matching.rules import STRICT, RequestRules
from flowproof.mocks import ToolMocks
from flowproof.proxy.app import ModelCall
from flowproof.trace.model import Turn
from flowproof.traffic import NO_RETRY, Answer, Traffic

DIVERGENCE = "flowproof_replay_divergence"


class ReplayBackend:
    """Serves the model lane. `matcher` is that lane's matching rule over the recorded turns,
    handed in by the engine (engine/strategy.py picks the rule the lane follows)."""

    def __init__(
        self,
        matcher: TurnMatcher,
        mocks: ToolMocks,
        traffic: Traffic,
        rules: RequestRules = STRICT,
    ) -> None:
        self.matcher = matcher
        self.mocks = mocks
        self.traffic = traffic
        self.normalizer = rules.normalizer

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
        if closest is None:
            return divergence.extra_call(number, len(self.matcher.turns))
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

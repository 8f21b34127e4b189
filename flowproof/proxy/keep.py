"""`record --keep-matching`: heal a trace by re-recording only what changed.

Every request that matches an unconsumed turn of the existing trace is served from it (by the
model boundary's rule: earliest unconsumed exact match, after the flow's `normalize:` and
`ignore_fields:`, as at replay) and kept byte for byte; only the rest is forwarded to the real
model. An unchanged prefix therefore costs nothing and keeps its bytes, and `record --diff`
shows just the turns that changed.
"""

from __future__ import annotations

from dataclasses import replace

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import ToolMocks
from flowproof.live.traffic import Answer, Traffic
from flowproof.matching.match import ConversationMatcher, TurnMatcher
from flowproof.matching.rules import STRICT, RequestRules
from flowproof.proxy.backend import Backend, ModelCall
from flowproof.proxy.forward import recorded_digest
from flowproof.proxy.replay import served


class KeepMatchingBackend:
    def __init__(
        self,
        kept: TurnMatcher | ConversationMatcher,
        forward: Backend,
        mocks: ToolMocks,
        traffic: Traffic,
        rules: RequestRules = STRICT,
    ) -> None:
        self.kept = kept
        self.forward = forward
        self.mocks = mocks
        self.traffic = traffic
        self.normalizer = rules.normalizer

    async def answer(self, call: ModelCall) -> Answer:
        dialect, request = call.dialect, call.body
        try:
            substituted = dialect.substitute_tool_results(request, self.mocks)
        except ToolResultsExhausted:
            return await self.forward.answer(call)  # which says why
        # As replay matches (replay.matchable), from the one substitution the digest reads too.
        normalized = self.normalizer.to_placeholders(substituted)
        index = self.kept.claim(dialect.name, normalized)
        if index is None:
            return await self.forward.answer(call)
        self.traffic.kept.add(len(self.traffic.turns))
        answer = served(dialect, normalized, self.kept.turns[index], self.normalizer)
        # The kept turn is this recording's: it keeps the digest of the bytes sent now, taken
        # as record takes it (mocks substituted into the same body the match read).
        digest = recorded_digest(call, substituted)
        assert answer.turn is not None  # served() always names the turn it served
        return replace(answer, turn=replace(answer.turn, request_sha256=digest))

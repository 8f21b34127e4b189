"""Why a flow failed at the boundary, in words, most fundamental first.

Everything here reads flowproof's own record of the traffic first; how the agent process or
service ended is consulted only to explain a failure, never to excuse one.
"""

from __future__ import annotations

from flowproof.core.lanes import MODEL_LANE
from flowproof.core.words import plural
from flowproof.drivers.command import AgentOutcome
from flowproof.drivers.env import ORIGIN_ONLY, WITH_V1, WITHOUT_V1
from flowproof.drivers.url import TriggerOutcome
from flowproof.live.traffic import Traffic


def boundary_reasons(
    traffic: Traffic,
    driven: AgentOutcome | TriggerOutcome,
    expected_turns: int | None,
    timeout: float,
    port: int,
) -> list[str]:
    """`expected_turns` is how many model turns the flow must serve (the trace's count at
    replay); None when any number will do (record). An agent that only used its MCP tools
    (a lane has entries) made no model request and needed none. In a `conversation:` flow, an
    agent that ended before it answered every user turn is said so first, naming the turn."""
    reasons: list[str] = []
    if traffic.divergence is not None:
        reasons.append(traffic.divergence.render())
    reasons.extend(traffic.failures)
    if driven.timed_out:
        reasons.append(_timed_out(driven, timeout) + _waiting_for(traffic))
    is_service = isinstance(driven, TriggerOutcome)
    tools_only = any(entries for lane, entries in traffic.lanes.items() if lane != MODEL_LANE)
    if not traffic.requests and not tools_only:
        unreachable = isinstance(driven, TriggerOutcome) and driven.error
        reasons.append(
            _trigger_failed(driven)
            if isinstance(driven, TriggerOutcome) and unreachable
            else _no_requests(driven, port, len(traffic.outsiders))
        )
    elif not reasons and (unanswered := _unanswered(traffic)) is not None:
        how = (
            f"; it exited with code {driven.exit_code}"
            + _tail("its stderr ended with", driven.stderr_tail)
            if isinstance(driven, AgentOutcome) and driven.exit_code not in (0, None)
            else ""
        )
        reasons.append(unanswered + how)
    elif isinstance(driven, AgentOutcome) and driven.exit_code not in (0, None) and not reasons:
        reasons.append(
            f"the agent exited with code {driven.exit_code}"
            + _tail("its stderr ended with", driven.stderr_tail)
        )
    if expected_turns is not None and not reasons and len(traffic.turns) < expected_turns:
        reason = (
            f"served {len(traffic.turns)} of {expected_turns} recorded turns: the agent "
            "finished without asking for the rest"
        )
        if is_service:
            reason += "; " + _service_hint(port)
        reasons.append(reason)
    return reasons


def _waiting_for(traffic: Traffic) -> str:
    """What a conversation was waiting for when its agent ran out of time: an agent that waits
    for its next turn while flowproof waits for the model's reply to this one waits for ever."""
    conversation = traffic.conversation
    if conversation is None or not conversation.by_reply:
        return ""
    if conversation.current >= len(conversation.texts):
        return ""
    number = conversation.current
    return (
        f"; flowproof was still waiting for conversation turn {number}'s reply (a model "
        f"response with no tool call) before writing turn {number + 1} on the agent's stdin"
    )


def _unanswered(traffic: Traffic) -> str | None:
    return traffic.conversation.unanswered() if traffic.conversation is not None else None


def _timed_out(driven: AgentOutcome | TriggerOutcome, timeout: float) -> str:
    if isinstance(driven, TriggerOutcome):
        return f"the service did not answer the trigger within its timeout of {timeout:g}s"
    return (
        f"the agent was still running after its timeout of {timeout:g}s; "
        "flowproof stopped it and every process it started"
    )


def _trigger_failed(driven: TriggerOutcome) -> str:
    return f"the trigger failed: {driven.error}"


def _no_requests(driven: AgentOutcome | TriggerOutcome, port: int, outsiders: int) -> str:
    if isinstance(driven, TriggerOutcome):
        return (
            "the service made no model requests to flowproof's proxy, so nothing was "
            f"recorded or served; {_service_hint(port)}"
        )
    if outsiders:  # most likely the agent's own client, which dropped the path it was given
        return (
            "the agent made no model request flowproof could serve: "
            f"{plural(outsiders, 'request')} reached the proxy without the flow's capability "
            f"and {'was' if outsiders == 1 else 'were'} refused (403). Its client most likely "
            "builds its URL from the host and port alone; give it the injected base URL or "
            "${flowproof.proxy_url} exactly as given, path included (docs/wiring.md)"
        )
    if driven.exit_code not in (0, None):
        return (
            f"the agent exited with code {driven.exit_code} before making any model request"
            + _tail("its stderr ended with", driven.stderr_tail)
        )
    variables = ", ".join((*WITH_V1, *WITHOUT_V1, *ORIGIN_ONLY))
    return (
        "the agent made no model requests to flowproof's proxy, so nothing was recorded or "
        "served. Its model client most likely does not read the base URL flowproof injects "
        f"({variables}); point it at ${{flowproof.proxy_url}} (includes /v1) or "
        "${flowproof.proxy_url_no_v1} in agent.env"
    )


def _service_hint(port: int) -> str:
    return (
        f"a url: service must send its model calls to the proxy on port {port}: start it "
        f"with OPENAI_BASE_URL=http://127.0.0.1:{port}/v1 (or "
        f"ANTHROPIC_BASE_URL=http://127.0.0.1:{port})"
    )


def _tail(label: str, text: str) -> str:
    return f"; {label}:\n{_indent(text)}" if text.strip() else " and printed nothing on stderr"


def _indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())

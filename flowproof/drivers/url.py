"""Drive an agent service that is already running: POST the task to it, once (or, for a
`conversation:` flow, once per user turn, each POST after the last one's answer).

flowproof cannot inject environment into a service it did not start, so the service must
already point its model client at the proxy's fixed port. The trigger's HTTP status is
informational only: a service that answers 500 after swallowing a divergence still fails,
because the verdict is read from the proxy's record of the traffic.

This module opens a connection to the URL the spec names, which is why pyproject.toml exempts
it from the no-network-client lint rule; it never talks to a model.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from flowproof.core.tasks import create_task
from flowproof.drivers.base import DriverOutcome
from flowproof.guards.spellings import clip
from flowproof.spec import body as body_templates

if TYPE_CHECKING:
    from flowproof.live.conversation import Conversation

_BODY_SHOWN = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerOutcome(DriverOutcome):
    """How the POST to the service ended. Informational: the verdict comes from the traffic."""

    status: int | None
    """The HTTP status, or None when there was no answer."""
    body: str
    error: str
    """Why there was no answer (unreachable), empty otherwise."""


async def trigger_url(
    url: str,
    prompt: str,
    headers: Mapping[str, str],
    timeout: float,
    stop: asyncio.Event,
    sent: Any = None,
) -> TriggerOutcome:
    """`sent`: what to POST instead of `{"prompt": prompt}` (`turn_body`)."""
    started = time.monotonic()
    post = create_task(_post(url, prompt, headers, sent), name="url-trigger")
    stopped = create_task(stop.wait(), name="url-trigger-stop")
    await asyncio.wait({post, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if not post.done():
        post.cancel()
        return TriggerOutcome(
            status=None,
            body="",
            error="",
            timed_out=not stop.is_set(),
            stopped_early=stop.is_set(),
            seconds=time.monotonic() - started,
        )
    status, body, error = post.result()
    return TriggerOutcome(
        status=status,
        body=body,
        error=error,
        timed_out=False,
        stopped_early=False,
        seconds=time.monotonic() - started,
    )


def turn_body(
    template: Mapping[str, Any] | None, text: str, conversation_id: str, turn: int
) -> Any:
    """What one turn POSTs: the spec's `agent.body` filled in (spec/body.py); without one, a
    conversation's shape (`{"prompt": ..., "conversation_id": ..., "turn": ...}`)."""
    values: dict[str, str | int] = {
        "prompt": text,
        "conversation_id": conversation_id,
        "turn": turn,
    }
    return body_templates.filled(template or body_templates.CONVERSATION, values)


def new_conversation_id() -> str:
    """Minted for each run of a flow: the same in every turn of it, never the same twice."""
    return secrets.token_hex(8)


async def converse(
    url: str,
    conversation: Conversation,
    headers: Mapping[str, str],
    timeout: float,
    stop: asyncio.Event,
    template: Mapping[str, Any] | None = None,
) -> TriggerOutcome:
    """One POST per user turn (`turn_body`: by default `{"prompt": <the turn's text>,
    "conversation_id": <minted for this flow>, "turn": <1, 2, ...>}`), each sent once the one
    before was answered; the whole conversation within `timeout`. A turn the service could not
    be reached for, or did not answer in time, ends it: the later turns are never sent."""
    started = time.monotonic()
    conversation_id = new_conversation_id()
    outcome: TriggerOutcome | None = None
    for number, text in enumerate(conversation.texts, 1):
        conversation.begin(number)
        left = timeout - (time.monotonic() - started)
        body = turn_body(template, text, conversation_id, number)
        outcome = await trigger_url(url, text, headers, max(left, 0.001), stop, body)
        if outcome.status is None:
            break
    assert outcome is not None  # a conversation has a turn
    return replace(outcome, seconds=time.monotonic() - started)


async def _post(
    url: str, prompt: str, headers: Mapping[str, str], body: Any = None
) -> tuple[int | None, str, str]:
    import aiohttp  # only a `url:` flow pays for the client

    sent = body if body is not None else {"prompt": prompt}
    try:
        async with aiohttp.ClientSession(trust_env=False) as session:
            async with session.post(url, json=sent, headers=dict(headers)) as reply:
                text = await reply.text(errors="replace")
                return reply.status, clip(text, _BODY_SHOWN), ""
    except aiohttp.ClientError as exc:
        return None, "", f"could not reach {url}: {exc}"

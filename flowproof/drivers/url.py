"""Drive an agent service that is already running: POST the task to it, once.

flowproof cannot inject environment into a service it did not start, so the service must
already point its model client at the proxy's fixed port. The trigger's HTTP status is
informational only: a service that answers 500 after swallowing a divergence still fails,
because the verdict is read from the proxy's record of the traffic.

This module opens a connection to the URL the spec names, which is why pyproject.toml exempts
it from the no-network-client lint rule; it never talks to a model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass

from flowproof._tasks import create_task
from flowproof.drivers.base import DriverOutcome
from flowproof.spellings import clip

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
    url: str, prompt: str, headers: Mapping[str, str], timeout: float, stop: asyncio.Event
) -> TriggerOutcome:
    started = time.monotonic()
    post = create_task(_post(url, prompt, headers), name="url-trigger")
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


async def _post(url: str, prompt: str, headers: Mapping[str, str]) -> tuple[int | None, str, str]:
    import aiohttp  # only a `url:` flow pays for the client

    try:
        async with aiohttp.ClientSession(trust_env=False) as session:
            async with session.post(url, json={"prompt": prompt}, headers=dict(headers)) as reply:
                text = await reply.text(errors="replace")
                return reply.status, clip(text, _BODY_SHOWN), ""
    except aiohttp.ClientError as exc:
        return None, "", f"could not reach {url}: {exc}"

"""ForwardBackend: the ONLY module that opens an upstream connection (record mode).

The upstream and the key are fixed when the backend is built, from flowproof's own environment.
Nothing in a request can choose where it is forwarded: a proxy whose target a request could
pick would be an open relay pointed by whatever the agent under test sent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from flowproof.dialects.base import Dialect, ToolMocks, ToolResultsExhausted, without_transport
from flowproof.proxy.traffic import NO_RETRY, Answer, Traffic
from flowproof.trace.model import Turn

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
KEY_VARIABLES = ("FLOWPROOF_AGENT_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
UPSTREAM_VARIABLES = ("FLOWPROOF_AGENT_UPSTREAM", "OPENAI_BASE_URL")
_BODY_SHOWN = 2000


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where record forwards to, and with what credential. `key` never leaves this process
    except in the outbound Authorization header."""

    base_url: str
    key: str | None

    def __repr__(self) -> str:  # keep the key out of any log or traceback
        return f"Upstream(base_url={self.base_url!r}, key={'***' if self.key else None})"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Upstream:
        base = next((environ[v] for v in UPSTREAM_VARIABLES if environ.get(v)), DEFAULT_UPSTREAM)
        key = next((environ[v] for v in KEY_VARIABLES if environ.get(v)), None)
        return cls(base_url=base.rstrip("/"), key=key)

    def authorization(self) -> dict[str, str]:
        if not self.key:
            return {}
        value = self.key if self.key.lower().startswith("bearer ") else f"Bearer {self.key}"
        return {"Authorization": value}


class ForwardBackend:
    def __init__(self, upstream: Upstream, mocks: ToolMocks, traffic: Traffic) -> None:
        self.upstream = upstream
        self.mocks = mocks
        self.traffic = traffic
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def answer(self, dialect: Dialect, request: Any) -> Answer:
        if self.traffic.failures:
            return _refuse(dialect, "flowproof: this recording has already failed")
        try:
            request = without_transport(dialect.substitute_tool_results(request, self.mocks))
        except ToolResultsExhausted as exc:
            self.traffic.fail(str(exc))
            return _refuse(dialect, f"flowproof: {exc}")
        url = self.upstream.base_url + dialect.upstream_path
        try:
            status, text = await self._post(url, request)
        except aiohttp.ClientError as exc:
            self.traffic.fail(f"record could not reach the upstream {url}: {exc}")
            return Answer(
                502,
                dialect.error_body(
                    f"flowproof: upstream unreachable: {exc}", "flowproof_upstream_error"
                ),
                dict(NO_RETRY),
            )
        if not 200 <= status < 300:
            self.traffic.fail(f"the upstream {url} answered {status}: {self._scrub(text)}")
            return Answer(status, _json_or_text(self._scrub(text)), dict(NO_RETRY))
        try:
            response = json.loads(text)
        except ValueError:
            self.traffic.fail(
                f"the upstream {url} answered {status} with a body that is not JSON: "
                f"{self._scrub(text)}"
            )
            return _refuse(dialect, "flowproof: the upstream answer was not JSON")
        self.traffic.turns.append(Turn(dialect.name, request, response))
        return Answer(200, response)

    async def _post(self, url: str, request: Any) -> tuple[int, str]:
        if self._session is None:
            # trust_env=False: an HTTP(S)_PROXY in the environment must not re-route the upstream.
            self._session = aiohttp.ClientSession(trust_env=False)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            **self.upstream.authorization(),
        }
        body = json.dumps(request, ensure_ascii=False).encode()
        async with self._session.post(
            url, data=body, headers=headers, allow_redirects=False
        ) as reply:
            return reply.status, await reply.text(errors="replace")

    def _scrub(self, text: str) -> str:
        if self.upstream.key:
            text = text.replace(self.upstream.key, "***")
        return text if len(text) <= _BODY_SHOWN else text[:_BODY_SHOWN] + "…"


def _refuse(dialect: Dialect, message: str) -> Answer:
    return Answer(400, dialect.error_body(message, "flowproof_record_error"), dict(NO_RETRY))


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def upstream_from_os() -> Upstream:
    return Upstream.from_environ(os.environ)

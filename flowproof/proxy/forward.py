"""ForwardBackend: the ONLY module that opens an upstream connection (record mode).

The upstream and the key are fixed when the backend is built, from flowproof's own environment.
Nothing in a request can choose where it is forwarded: a proxy whose target a request could
pick would be an open relay pointed by whatever the agent under test sent.

What the agent sends is forwarded faithfully otherwise: its method, its query string
(`/v1/messages?beta=true`), and the client headers a provider reads (every `anthropic-*` and
`openai-*` header: `anthropic-beta`, `openai-beta`, `openai-organization`, `openai-project`,
...). None of those is stored: a trace holds bodies only. The request and the response are
stored normalised (the flow's `normalize:` facts as placeholders), and the agent is answered
with the stored response restored, exactly as a replay will answer it; the upstream model
sees the request as the agent sent it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import ToolMocks
from flowproof.core.readjson import UnreadableJson, read_json
from flowproof.core.tasks import create_task
from flowproof.dialects.base import Dialect, Route, every_dialect, without_transport
from flowproof.guards.redaction import RECORD_KEY_VARIABLES, SHARED_KEY_VARIABLES, Redactor
from flowproof.guards.spellings import clip
from flowproof.live.traffic import NO_RETRY, Answer, Traffic
from flowproof.matching.rules import STRICT, RequestRules
from flowproof.outbound.reach import Reach
from flowproof.proxy import DEFAULT_UPSTREAM_TIMEOUT
from flowproof.proxy.backend import ModelCall
from flowproof.proxy.wire import (
    ACCEPTED_ENCODINGS,
    KEY_REFUSED,
    RETRY_LATER,
    Deferral,
    Deferrals,
    Place,
    asked_wait,
    key_refused,
    passed_on,
    status_named,
)
from flowproof.trace.model import Turn

if TYPE_CHECKING:
    import aiohttp

OVERRIDE_VARIABLE = "FLOWPROOF_AGENT_UPSTREAM"
BASE_VARIABLES = (
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "AZURE_OPENAI_ENDPOINT",
    "OLLAMA_HOST",
)
FORWARDED_PREFIXES = ("anthropic-", "openai-")
"""Client headers with these prefixes are the providers' own (beta flags, API versions,
organisation and project): forwarded at record, never stored."""
NEVER_FORWARDED = ("key", "token", "secret", "auth")
"""...unless the name suggests a credential: the agent holds only flowproof's placeholder key,
and the upstream gets flowproof's own."""
_BODY_SHOWN = 2000
_CONNECT_TIMEOUT = 30.0


def forwarded_headers(dialect: Dialect, incoming: Mapping[str, str]) -> dict[str, str]:
    """The client headers record passes on (FORWARDED_PREFIXES, and the dialect's own list),
    a repeated header's values joined by commas."""
    wanted = {name.lower() for name in dialect.passthrough_headers}
    found: dict[str, list[str]] = {}
    for name, value in incoming.items():
        lower = name.lower()
        provider = lower.startswith(FORWARDED_PREFIXES) and not any(
            word in lower for word in NEVER_FORWARDED
        )
        if provider or lower in wanted:
            found.setdefault(lower, []).append(value)
    return {name: ", ".join(values) for name, values in found.items()}


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where record forwards to, and with what credential, read once from flowproof's own
    environment. `key` never leaves this process except in the outbound auth header."""

    override: str | None
    """FLOWPROOF_AGENT_UPSTREAM: one base URL (with `/v1`) for every dialect; a dialect whose
    upstream path starts at the host (`upstream_from_origin`) takes it without the `/v1`."""
    bases: Mapping[str, str]
    """The per-API variables (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, ...) as they were at start."""
    key: str | None
    """The key of the dialects that read the shared list (SHARED_KEY_VARIABLES)."""
    keys: Mapping[str, str] = field(default_factory=dict)
    """Every record key variable that was set, by name, for the dialects with a list of
    their own (`Dialect.key_variables`)."""
    reach: Reach = field(default_factory=Reach)
    """The proxy each upstream call goes through and the certificates trusted, as the
    environment said at start."""

    def __repr__(self) -> str:  # keep the key out of any log or traceback
        return f"Upstream(override={self.override!r}, key={'***' if self.key else None})"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Upstream:
        bases = {name: environ[name] for name in BASE_VARIABLES if environ.get(name)}
        keys = {name: environ[name] for name in RECORD_KEY_VARIABLES if environ.get(name)}
        key = next((keys[name] for name in SHARED_KEY_VARIABLES if name in keys), None)
        reach = Reach.from_environ(environ)
        return cls(environ.get(OVERRIDE_VARIABLE) or None, bases, key, keys, reach)

    def configured_urls(self) -> tuple[str, ...]:
        """Where record is set up to forward, checked before it starts: the override, else
        each base variable that is set, else every provider's public API."""
        if self.override:
            return (self.override,)
        if self.bases:
            return tuple(_with_scheme(base) for base in self.bases.values())
        return tuple(d.default_upstream for d in every_dialect() if d.default_upstream)

    def base_variable_for(self, dialect: Dialect) -> str | None:
        """The variable `dialect`'s upstream URL was taken from; None for the public API."""
        if self.override:
            return OVERRIDE_VARIABLE
        return dialect.upstream_variable if dialect.upstream_variable in self.bases else None

    def key_for(self, dialect: Dialect) -> str | None:
        if dialect.key_variables is None:
            return self.key
        return next((self.keys[v] for v in dialect.key_variables if v in self.keys), None)

    def key_variable_for(self, dialect: Dialect) -> str | None:
        """The variable the key sent for `dialect` was read from; None when none is set."""
        return next((v for v in self.key_variables(dialect) if v in self.keys), None)

    @staticmethod
    def key_variables(dialect: Dialect) -> tuple[str, ...]:
        """Where `dialect`'s key is read from, first set wins."""
        return dialect.key_variables or SHARED_KEY_VARIABLES

    def url_for(self, dialect: Dialect, route: Route | None = None) -> str:
        if self.override:
            base = self.override.rstrip("/")
            if dialect.upstream_from_origin:
                base = base.removesuffix("/v1")
        elif dialect.upstream_variable in self.bases:
            base = _with_scheme(self.bases[dialect.upstream_variable].rstrip("/"))
            if dialect.upstream_variable_adds_v1 and not base.endswith("/v1"):
                base += "/v1"
        else:
            base = dialect.default_upstream
        path = route.upstream_path if route is not None else dialect.upstream_path
        return base.rstrip("/") + path

    def headers_for(self, dialect: Dialect, incoming: Mapping[str, str]) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": ACCEPTED_ENCODINGS,
        }
        headers.update(forwarded_headers(dialect, incoming))
        key = self.key_for(dialect)
        if key:
            headers.update(dialect.auth_headers(key))
        return headers

    def redactor(self) -> Redactor:
        """Hides every key this upstream holds, for scrubbing what an upstream echoes."""
        shared = {SHARED_KEY_VARIABLES[0]: self.key} if self.key else {}
        return Redactor({**shared, **self.keys})


def _with_scheme(base: str) -> str:
    """OLLAMA_HOST is often written `127.0.0.1:11434`, with no scheme: Ollama takes it as http."""
    return base if "://" in base else f"http://{base}"


@dataclass(frozen=True, slots=True)
class _Reply:
    """An upstream answer as record reads it: whole, decoded, and its retry advice."""

    status: int
    text: str
    advice: dict[str, str]


class ForwardBackend:
    def __init__(
        self,
        upstream: Upstream,
        mocks: ToolMocks,
        traffic: Traffic,
        rules: RequestRules = STRICT,
        timeout: float = DEFAULT_UPSTREAM_TIMEOUT,
    ) -> None:
        self.upstream = upstream
        self.mocks = mocks
        self.traffic = traffic
        self.normalizer = rules.normalizer
        self.timeout = timeout
        """Seconds one upstream answer may take, whole (`record --upstream-timeout`)."""
        self._hide = upstream.redactor()
        self._session: aiohttp.ClientSession | None = None
        self._in_flight: set[asyncio.Task[_Reply]] = set()
        self._closed = False
        self._deferrals = Deferrals()

    async def close(self) -> None:
        """Called once the agent is gone (the flow ended, timed out or was interrupted): the
        upstream calls still in flight are cancelled, as their answers have nobody left to
        go to, and the proxy would otherwise wait them out before it could stop. A request
        the upstream told to try again later, and that no retry got answered, fails the
        record here: the agent may have swallowed its SDK's last error."""
        self._closed = True
        for call in list(self._in_flight):
            call.cancel()
        if self._session is not None:
            await self._session.close()
        for reason in self._deferrals.unanswered():
            self.traffic.fail(reason)

    async def answer(self, call: ModelCall) -> Answer:
        dialect, request, headers = call.dialect, call.body, call.headers
        place = Place(len(self.traffic.turns) + 1, len(self.traffic.requests))
        if self.traffic.failures:
            return _refuse(dialect, "flowproof: this recording has already failed")
        route = call.route or Route(dialect.upstream_path)
        try:
            substituted = dialect.substitute_tool_results(request, self.mocks)
        except ToolResultsExhausted as exc:
            self.traffic.fail(str(exc))
            return _refuse(dialect, f"flowproof: {exc}")
        digest = recorded_digest(call, substituted)
        request = dialect.upstream_body(substituted)
        import aiohttp  # record only: replay never loads a network client (nor pays its import)

        from flowproof.outbound.route import UnusableProxy

        url = self.upstream.url_for(dialect, route)
        if not url.startswith(("http://", "https://")):
            why = (
                f"record has no upstream for {dialect.name}: set {dialect.upstream_variable} "
                f"(or {OVERRIDE_VARIABLE}) in flowproof's environment"
            )
            self.traffic.fail(why)
            return _refuse(dialect, f"flowproof: {why}")
        outbound = self.upstream.headers_for(dialect, headers)
        target = f"{url}?{route.query}" if route.query else url
        try:
            reply = await self._call(call.method, target, route.outbound(request), outbound)
        except _Abandoned:
            return _refuse(dialect, "flowproof: the flow has ended")
        except UnusableProxy as exc:  # one record was not set up to reach, so not checked
            self.traffic.fail(str(exc))
            return _refuse(dialect, f"flowproof: {exc}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            status, why = self._transport_failure(exc, url, place)
            self.traffic.fail(why)
            return Answer(
                status,
                dialect.error_body(f"flowproof: {why}", "flowproof_upstream_error"),
                dict(NO_RETRY),
            )
        attempt = json.dumps([call.method, target, request], sort_keys=True, ensure_ascii=False)
        if reply.status in RETRY_LATER:
            # Passed on as the provider sent it, so the agent's SDK retries as it would.
            deferral = Deferral(reply.status, asked_wait(reply.advice))
            self._deferrals.defer(attempt, place, deferral)
            return Answer(reply.status, _json_or_text(self._scrub(reply.text)), reply.advice)
        if not 200 <= reply.status < 300:
            self.traffic.fail(self._refusal(dialect, reply, f"{call.method} {url}", place))
            return Answer(reply.status, _json_or_text(self._scrub(reply.text)), dict(NO_RETRY))
        try:
            response = read_json(reply.text)
        except UnreadableJson as exc:
            # NaN, a duplicated key or nesting past the reader's depth would make a trace
            # that no replay reads back: the record fails here, saying what and where.
            problem = "that is not JSON" if exc.syntax else f"flowproof does not read ({exc})"
            self.traffic.fail(
                f"the upstream {url} answered {reply.status} with a body {problem}: "
                f"{self._scrub(reply.text)}"
            )
            return _refuse(dialect, "flowproof: the upstream answer was not JSON")
        if (note := self._deferrals.answered(attempt)) is not None:
            self.traffic.notes.append(note)
        stored = self.normalizer.to_placeholders(response)
        kept = self.normalizer.to_placeholders(without_transport(request))
        turn = Turn(dialect.name, kept, stored, digest)
        return Answer(200, self.normalizer.from_placeholders(stored), turn=turn)

    def _refusal(self, dialect: Dialect, reply: _Reply, asked: str, place: Place) -> str:
        """Why a non-2xx answer that is not "try again later" fails the record; `asked` is
        the method and URL of the request."""
        url = asked.split(" ", 1)[1]
        if reply.status in KEY_REFUSED:
            variable = self.upstream.key_variable_for(dialect)
            read = ", ".join(self.upstream.key_variables(dialect))
            said = self._scrub(reply.text)
            return key_refused(reply.status, url, place, variable, read) + f"; it answered: {said}"
        said = self._scrub(reply.text) if reply.text.strip() else "(an empty body)"
        why = (
            f"the upstream answered {status_named(reply.status)} to {asked} at "
            f"{place.render()}: {said}"
        )
        source = self.upstream.base_variable_for(dialect)
        if reply.status == 404 and source is not None and _lacks_v1(dialect, url):
            # The commonest cause: a base URL given as the server's origin, while the
            # OpenAI-style and Anthropic APIs live under /v1.
            why += (
                f"; the upstream URL usually ends in /v1: set {source}={_v1_example(url, dialect)}"
            )
        return why

    def _transport_failure(self, exc: Exception, url: str, place: Place) -> tuple[int, str]:
        """The status the agent is answered with, and why the record fails, for an upstream
        call that ended without a whole answer."""
        import aiohttp

        from flowproof.outbound.proxy_failure import proxy_failure
        from flowproof.outbound.trust import untrusted_certificate

        at = place.render()
        if not isinstance(exc, TimeoutError):
            refused = untrusted_certificate(exc) or proxy_failure(
                url, exc, self.upstream.reach.routes
            )
            if refused is not None:
                return 502, refused
        if _connection_refused(exc):
            return 502, (
                f"connection refused: is the upstream running at {_origin(url)}? record sent "
                f"{at} to {url}; start it there, or point {OVERRIDE_VARIABLE} at where it runs"
            )
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            return 502, f"record could not reach the upstream {url} at {at}: {exc}"
        if isinstance(exc, TimeoutError):
            return 504, (
                f"the upstream {url} did not answer {at} within {self.timeout:g} s; "
                "give a slow model longer with `flowproof record --upstream-timeout SECONDS`"
            )
        if isinstance(exc, aiohttp.ClientPayloadError) and "content-encoding" not in str(exc):
            return 502, (
                f"the upstream {url} closed the connection before its answer was complete, at "
                f"{at} ({exc.__cause__ or exc}); record again once the connection to it is "
                "stable"
            )
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            return 502, (
                f"the upstream {url} closed the connection without answering {at}; record "
                "again once the connection to it is stable"
            )
        if "content-encoding" in str(exc):
            return 502, (
                f"the upstream {url} answered {at} in a compression flowproof could not decode "
                f"({_encoding_in(exc)}), though flowproof asks for {ACCEPTED_ENCODINGS} or none: "
                "a gateway in front of the upstream may be compressing on its own"
            )
        return 502, f"record could not reach the upstream {url} at {at}: {exc}"

    async def _call(self, method: str, url: str, request: Any, headers: dict[str, str]) -> _Reply:
        """The upstream call, as a task of its own so that close() can abandon it."""
        call = create_task(self._send(method, url, request, headers), name="upstream-call")
        self._in_flight.add(call)
        try:
            return await call
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._closed and (current is None or not current.cancelling()):
                raise _Abandoned from None  # close() cancelled the call, not the handler
            raise
        finally:
            self._in_flight.discard(call)

    async def _send(self, method: str, url: str, request: Any, headers: dict[str, str]) -> _Reply:
        import aiohttp

        if self._session is None:
            self._session = self.upstream.reach.open_session()
        body = json.dumps(request, ensure_ascii=False).encode()
        # The whole answer, headers to last byte, within the timeout: record asks for one
        # complete answer, so an upstream that never finishes is caught however it stalls.
        timeout = aiohttp.ClientTimeout(
            total=self.timeout, sock_connect=min(_CONNECT_TIMEOUT, self.timeout)
        )
        async with self._session.request(
            method,
            url,
            data=body,
            headers=headers,
            allow_redirects=False,
            proxy=self.upstream.reach.proxy_for(url),
            timeout=timeout,
        ) as reply:
            # aiohttp decodes a gzip or deflate body as it reads it: the trace keeps it plain.
            text = await reply.text(errors="replace")
            return _Reply(reply.status, text, passed_on(reply.headers))

    def _scrub(self, text: str) -> str:
        """What the upstream answered, its keys hidden in every spelling before it is cut, so
        the cut can never leave a part of one."""
        return clip(self._hide(text), _BODY_SHOWN)


def _connection_refused(exc: BaseException) -> bool:
    """Nothing listens at the upstream's address: aiohttp says `Cannot connect to host ...
    ssl:default` whatever the scheme, so the refusal is read from the OS error beneath."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return True
        cause = getattr(cause, "os_error", None) or cause.__cause__
    return False


def _origin(url: str) -> str:
    """`http://127.0.0.1:8080` of `http://127.0.0.1:8080/v1/messages`."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _lacks_v1(dialect: Dialect, url: str) -> bool:
    """A 404 from an upstream whose API path has no `/v1`, for a dialect whose base URL
    carries it (the dialects that take the origin build the whole path themselves)."""
    return not dialect.upstream_from_origin and "/v1" not in urlsplit(url).path


def _v1_example(url: str, dialect: Dialect) -> str:
    """The URL the base would have made with `/v1` added where the API path starts."""
    base = url.removesuffix(dialect.upstream_path).rstrip("/")
    return f"{base}/v1"


def _encoding_in(exc: Exception) -> str:
    """The encoding aiohttp names in a decoding error (`brotli (br)`, `gzip`)."""
    found = re.search(r"content-encoding: ([^.\n']+)", str(exc))
    return f"Content-Encoding {found.group(1).strip()}" if found else " ".join(str(exc).split())


class _Abandoned(Exception):
    """An upstream call close() cancelled: the flow ended while it was in flight."""


def recorded_digest(call: ModelCall, substituted: Any) -> str | None:
    """The digest a recorded turn keeps of what the agent sent (matching/exact.py); None when
    a mock rewrote the request, whose stored body is then not what those bytes say."""
    if substituted is not call.body and substituted != call.body:
        return None
    return call.digest() if call.raw else None


def _refuse(dialect: Dialect, message: str) -> Answer:
    return Answer(400, dialect.error_body(message, "flowproof_record_error"), dict(NO_RETRY))


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text

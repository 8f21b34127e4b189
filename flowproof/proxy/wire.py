"""What record makes of an upstream answer that is not one whole 2xx JSON body.

Real providers rate-limit (429), shed load (503, Anthropic's 529 overloaded), refuse a key
(401, 403), and sit behind load balancers that cut connections. Record asks the upstream for
one complete answer per model request, so each of these is a fact about one request:

- "try again later" (RETRY_LATER) is passed on to the agent as the provider sent it, its
  `Retry-After` included and without flowproof's no-retry header, so the agent's SDK backs off
  and retries exactly as it would against the provider. The refused attempts are kept in a
  ledger (`Deferrals`), never in the trace: once a retry is answered, the flow gets a note
  saying how many attempts were refused and how long the upstream asked to wait, and the trace
  holds only the answer, which replay serves at once. A request the agent never retried into
  an answer fails the record, naming the status.
- a refused key (KEY_REFUSED) fails the record, naming the variable the key was read from.

Pure: statuses, headers and places in, words out. proxy/forward.py does the IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus

from flowproof.core.words import plural

ACCEPTED_ENCODINGS = "gzip, deflate"
"""What record asks the upstream to compress with: the encodings its HTTP client decodes
without optional packages, and the ones every provider serves. Brotli and zstd are never
asked for, so a provider answers in one of these or uncompressed."""
RETRY_LATER = {429: "Too Many Requests", 502: "Bad Gateway", 503: "Service Unavailable"}
RETRY_LATER |= {504: "Gateway Timeout", 529: "Overloaded"}
"""Statuses that mean "not now": the agent's SDK retries them (after `Retry-After`)."""
KEY_REFUSED = {401: "Unauthorized", 403: "Forbidden"}
PASSED_ON = ("retry-after", "retry-after-ms", "x-should-retry")
"""The upstream's headers that tell a client whether and when to retry: given to the agent
with a "try again later" answer, as the provider sent them."""


def status_named(status: int) -> str:
    """`429 Too Many Requests`, `529 Overloaded`: the number with its reason phrase."""
    known = RETRY_LATER.get(status) or KEY_REFUSED.get(status)
    if known is None:
        try:
            known = HTTPStatus(status).phrase
        except ValueError:
            return str(status)
    return f"{status} {known}"


def passed_on(headers: Mapping[str, str]) -> dict[str, str]:
    """The retry advice among an upstream answer's headers (names matched case-blind)."""
    lower = {name.lower(): value for name, value in headers.items()}
    return {name: lower[name] for name in PASSED_ON if name in lower}


def asked_wait(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the upstream asked the client to wait, from `retry-after-ms` or `retry-after`
    (seconds, or an HTTP date); None when it said nothing readable."""
    advice = passed_on(headers)
    if "retry-after-ms" in advice:
        try:
            return max(0.0, float(advice["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = advice.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True, slots=True)
class Place:
    """Where in the flow a model request stands, as a user reads it."""

    turn: int
    """The model turn its answer would have been (1-based)."""
    request: int
    """Its place among the requests that reached the proxy (1-based), retries included."""

    def render(self) -> str:
        return f"turn {self.turn} (model request {self.request})"


@dataclass(frozen=True, slots=True)
class Deferral:
    """One attempt the upstream answered with "try again later"."""

    status: int
    wait: float | None


@dataclass(slots=True)
class Deferrals:
    """The attempts refused for now, by request (its method, URL and body), until a retry of
    the same request is answered."""

    waiting: dict[str, tuple[Place, list[Deferral]]] = field(default_factory=dict)

    def defer(self, request: str, place: Place, deferral: Deferral) -> None:
        self.waiting.setdefault(request, (place, []))[1].append(deferral)

    def answered(self, request: str) -> str | None:
        """The note for `request`, answered now, when attempts of it were refused before."""
        if request not in self.waiting:
            return None
        place, refused = self.waiting.pop(request)
        return (
            f"{place.render()}: the upstream answered {_attempts(refused)}; the agent "
            "retried and was answered. The trace keeps only the answer, so replay serves it "
            "at once"
        )

    def unanswered(self) -> list[str]:
        """Why the record fails for each request the agent never retried into an answer."""
        return [
            f"{place.render()}: the upstream answered {_attempts(refused)}, and the agent "
            "stopped retrying before it was answered: wait until the provider's limit resets "
            "or its load passes (or lower the request rate), then record again"
            for place, refused in self.waiting.values()
        ]


def _attempts(refused: list[Deferral]) -> str:
    """`429 Too Many Requests to 2 attempts, asking to wait 1 s each`."""
    counts: dict[int, int] = {}
    for deferral in refused:
        counts[deferral.status] = counts.get(deferral.status, 0) + 1
    statuses = ", ".join(
        status_named(status) + (f" (x{count})" if count > 1 else "")
        for status, count in counts.items()
    )
    return f"{statuses} to {plural(len(refused), 'attempt')}, {_waits(refused)}"


def _waits(refused: list[Deferral]) -> str:
    waits = [deferral.wait for deferral in refused if deferral.wait is not None]
    if not waits:
        return "without saying how long to wait"
    if len(refused) == 1:
        return f"asking to wait {_seconds(waits[0])}"
    return f"asking to wait {_seconds(sum(waits))} in all"


def _seconds(value: float) -> str:
    return f"{value:g} s"


def key_refused(status: int, url: str, place: Place, variable: str | None, read: str) -> str:
    """The failure for a 401/403: the status, and the variable to check (never the key).
    `read` lists the variables record reads the key from, in order."""
    check = (
        f"check {variable} in flowproof's environment (record takes the first of {read} "
        "that is set)"
        if variable is not None
        else f"no key was sent, as none of {read} is set: set one in flowproof's environment"
    )
    return (
        f"the upstream {url} refused the key ({status_named(status)}) at {place.render()}: {check}"
    )

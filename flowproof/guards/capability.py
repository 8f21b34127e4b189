"""The capability that makes flowproof's loopback listeners the agent's alone.

The model proxy and the streamable-HTTP MCP stand-ins listen on 127.0.0.1, where any process
on the machine can connect (`/proc/net/tcp` lists the port). A request the agent did not send
must never be forwarded with the real key, written into a trace, or allowed to consume a
recorded turn at replay. So every flow mints one secret and hands it to the agent inside every
URL flowproof injects, as the first segment of the path:

    http://127.0.0.1:PORT/<capability>/v1

A request whose path does not start with it is refused before anything else reads it. The
prefix is a path segment rather than a header because every model and MCP client the agent
matrix covers keeps the path of the base URL it is given (clients that take an origin only,
such as Ollama's `OLLAMA_HOST` and the Gemini and Azure endpoints, keep a path too), while
many clients send the key in a header flowproof does not choose.

A `url:` service is started by the user before the flow, with a base URL flowproof cannot
extend, so its flow admits requests without the capability as well (a request with it still
has it taken off): see docs/wiring.md.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field

TOKEN_BYTES = 18
"""24 URL-safe characters: 144 bits, beyond guessing by a process that can only knock."""
REDACTED_AS = "proxy capability"
"""What the redactor writes in its place, should an agent echo its base URL."""


def _mint() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


@dataclass(frozen=True, slots=True)
class Capability:
    """One flow's secret path prefix, and whether a request must carry it."""

    token: str = field(default_factory=_mint, repr=False)
    """URL-safe, so it needs no escaping in a URL, a shell word or an environment variable."""
    required: bool = True
    """False for a `url:` flow, whose service was started without it."""

    @property
    def prefix(self) -> str:
        """`/<token>`: what goes between a listener's origin and the path a client appends."""
        return f"/{self.token}"

    def admit(self, path: str) -> str | None:
        """`path` with the capability taken off, or None when the request must be refused.

        The comparison takes the same time wherever a guess goes wrong, so the time of a
        refusal says nothing about how much of a guess was right."""
        segment, slash, rest = path.removeprefix("/").partition("/")
        if hmac.compare_digest(segment.encode(), self.token.encode()):
            return slash + rest or "/"
        return path if not self.required else None

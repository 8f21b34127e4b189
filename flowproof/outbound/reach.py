"""How record reaches the outside, for every upstream flowproof forwards to (the model APIs in
proxy/forward.py, a real streamable-HTTP MCP server in mcp/upstream.py).

One object decides it, so the model proxy and the MCP stand-ins never disagree on which
certificates are trusted or which proxy is used. It is read once, from the environment the
flow was opened with, and carried by the flow's upstream: nothing that changes the environment
later moves where record's connections go. aiohttp's own `trust_env` stays off, since it would
also apply proxy variables to a loopback upstream that no proxy can reach.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flowproof.outbound.route import ProxyRoutes
from flowproof.outbound.trust import upstream_context

if TYPE_CHECKING:  # record only: nothing on the replay path loads aiohttp's client
    import aiohttp


def _system_trust() -> ssl.SSLContext:
    return upstream_context({})


@dataclass(frozen=True, slots=True)
class Reach:
    """The proxy each upstream URL goes through, and the certificates its answer is checked
    against (outbound/trust.py)."""

    routes: ProxyRoutes = field(default_factory=ProxyRoutes)
    tls: ssl.SSLContext = field(default_factory=_system_trust)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Reach:
        """Raises ConfigError for SSL_CERT_FILE or SSL_CERT_DIR naming nothing usable."""
        return cls(ProxyRoutes.from_environ(environ), upstream_context(environ))

    def proxy_for(self, url: str) -> str | None:
        """The proxy URL aiohttp is given for a request to `url`, or None to go direct. Raises
        UnusableProxy for a proxy aiohttp cannot use (a SOCKS one)."""
        proxy = self.routes.proxy_for(url)
        return None if proxy is None else proxy.url

    def open_session(self, timeout: aiohttp.ClientTimeout | None = None) -> aiohttp.ClientSession:
        """A client session for upstream calls; each request passes `proxy=proxy_for(url)`."""
        import aiohttp

        connector = aiohttp.TCPConnector(ssl=self.tls)
        if timeout is None:
            return aiohttp.ClientSession(connector=connector, trust_env=False)
        return aiohttp.ClientSession(connector=connector, trust_env=False, timeout=timeout)

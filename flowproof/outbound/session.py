"""The record-time HTTP client session, shared by every upstream flowproof forwards to (the
model APIs in proxy/forward.py, a real streamable-HTTP MCP server in mcp/upstream.py).

One module decides how an upstream is reached, so the model proxy and the MCP stand-ins never
disagree on which certificates are trusted. Which proxy a request goes through is the flow's
own `ProxyRoutes` (outbound/route.py), read once from the environment the flow was opened with
and carried by its upstream: aiohttp's own `trust_env` stays off, since it would also apply
proxy variables to a loopback upstream that no proxy can reach.
"""

from __future__ import annotations

import aiohttp

from flowproof.outbound.route import ProxyRoutes
from flowproof.outbound.trust import upstream_context


def open_session(timeout: aiohttp.ClientTimeout | None = None) -> aiohttp.ClientSession:
    """A client session for upstream calls; each request passes `proxy=proxy_for(url)`.
    Certificates are checked against the platform's trust store (outbound/trust.py)."""
    connector = aiohttp.TCPConnector(ssl=upstream_context())
    if timeout is None:
        return aiohttp.ClientSession(connector=connector, trust_env=False)
    return aiohttp.ClientSession(connector=connector, trust_env=False, timeout=timeout)


def proxy_for(routes: ProxyRoutes, url: str) -> str | None:
    """The proxy URL aiohttp is given for a request to `url`, or None to go direct. Raises
    UnusableProxy for a proxy aiohttp cannot use (a SOCKS one)."""
    proxy = routes.proxy_for(url)
    return None if proxy is None else proxy.url

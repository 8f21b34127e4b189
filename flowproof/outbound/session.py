"""The record-time HTTP client session, shared by every upstream flowproof forwards to (the
model APIs in proxy/forward.py, a real streamable-HTTP MCP server in mcp/upstream.py).

One module decides how an upstream is reached, so the model proxy and the MCP stand-ins never
disagree on which certificates are trusted or which proxy is used. The environment is read
here, explicitly: aiohttp's own `trust_env` stays off, since it would also apply proxy
variables to a loopback upstream that no proxy can reach.
"""

from __future__ import annotations

import os

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


def proxy_for(url: str) -> str | None:
    """The proxy a request to `url` goes through, or None to go direct (outbound/route.py
    decides, from the proxy variables fixed when record started). Raises UnusableProxy for a
    proxy aiohttp cannot use (a SOCKS one)."""
    proxy = fixed_routes().proxy_for(url)
    return None if proxy is None else proxy.url


def fixed_routes() -> ProxyRoutes:
    """The routes `fix_routes` fixed; flowproof's own environment when nothing fixed them."""
    return _FIXED[-1] if _FIXED else fix_routes(ProxyRoutes.from_environ(os.environ))


def fix_routes(routes: ProxyRoutes) -> ProxyRoutes:
    """Fix the proxy choice for every upstream call that follows: called as record starts,
    with the routes read from the environment the flow was opened with, so nothing that
    changes the environment later can move where record's connections go."""
    _FIXED[:] = [routes]
    return routes


_FIXED: list[ProxyRoutes] = []

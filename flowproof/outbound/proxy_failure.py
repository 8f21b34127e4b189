"""What to say when a proxy, not the upstream behind it, is what record could not get through.

aiohttp's own text for a refused CONNECT carries the proxy's URL, credentials included, so it
is never shown: the line is built here from the proxy's `shown` spelling and the variable that
named it, which is what the user can fix.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp

from flowproof.outbound.route import ProxyRoutes


def proxy_failure(url: str, error: BaseException, routes: ProxyRoutes) -> str | None:
    """The line naming the proxy when `error` happened reaching the proxy that `url` goes
    through by `routes`; None when the error is the upstream's (or `url` goes direct)."""
    proxy = routes.proxy_for(url)
    if proxy is None:
        return None
    if isinstance(error, aiohttp.ClientHttpProxyError):
        return (
            f"record could not reach {url} through {proxy.described}: the proxy answered "
            f"{error.status} {error.message}; check the proxy and its credentials"
        )
    proxy_host = urlsplit(proxy.url).hostname
    if isinstance(error, aiohttp.ClientProxyConnectionError) or (
        isinstance(error, aiohttp.ClientConnectorError) and error.host == proxy_host
    ):
        cause = error.os_error.strerror or type(error.os_error).__name__
        return (
            f"record could not reach {proxy.described} (for {url}): {cause}; check the "
            f"proxy's address in {proxy.variable}, or add the upstream's host to NO_PROXY"
        )
    return None

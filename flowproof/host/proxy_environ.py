"""Proxy variables in the environment of every process flowproof starts.

An agent reaches flowproof's proxy and MCP stand-ins on loopback. A corporate machine or a
self-hosted runner often sets HTTP_PROXY/HTTPS_PROXY/ALL_PROXY, and most clients honour them
even for `http://127.0.0.1` (httpx, and so the openai and anthropic SDKs; `requests`; Node
agents that install an environment proxy agent): the agent's calls then go to the corporate
proxy, which cannot reach this machine's loopback, and the flow fails for a reason that has
nothing to do with the agent. So every environment flowproof hands a process has 127.0.0.1,
localhost and ::1 in NO_PROXY and no_proxy, after whatever the user listed there. The proxy
variables themselves are left alone: the agent's other traffic goes where the user sends it.

Pure: an environment in, an environment or a description out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""The names of this machine's loopback that flowproof's listeners are reached by."""
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
"""The variables clients take a proxy from, in both spellings (Python reads the lower-case one
first, curl only the lower-case http_proxy, most Node agents either)."""
_EVERY_HOST = "*"


def loopback_direct(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with the loopback names appended to NO_PROXY and no_proxy.

    Always, not only when a proxy variable is set: a proxy can also come from where flowproof
    cannot see it (a wrapper script that exports one, a client's own config file), and loopback
    is never reached through a proxy, so the entries cost nothing and keep the agent's
    environment the same on every machine.

    Each variable keeps its own entries, in order, and gains only the loopback names it lacks.
    When the user set only one of the two spellings, the other starts from the same entries:
    set to loopback alone, it would hide the user's list from clients that prefer it (Python
    reads no_proxy before NO_PROXY). A list that is `*` already sends everything direct and is
    left as it is (curl honours `*` only as the whole value).
    """
    env = dict(environ)
    given = {name: environ[name] for name in NO_PROXY_VARIABLES if name in environ}
    fallback = next(iter(given.values()), "")
    for name in NO_PROXY_VARIABLES:
        env[name] = _with_loopback(given.get(name, fallback))
    return env


def _with_loopback(listed: str) -> str:
    entries = [entry.strip() for entry in listed.split(",") if entry.strip()]
    if _EVERY_HOST in entries:
        return listed
    missing = [name for name in LOOPBACK if name not in {e.lower() for e in entries}]
    return ",".join([listed.strip().rstrip(","), *missing] if entries else missing)


@dataclass(frozen=True, slots=True)
class ProxySetting:
    """A proxy variable as it may be shown: its name and the proxy's host, never the URL's
    user or password (a proxy credential is a secret)."""

    name: str
    host: str
    """`host:port`, `host`, or "" when the value names no host that can be read."""


def proxy_settings(environ: Mapping[str, str]) -> tuple[ProxySetting, ...]:
    """The proxy variables set (non-empty) in `environ`, in PROXY_VARIABLES order."""
    return tuple(
        ProxySetting(name, _host(environ[name]))
        for name in PROXY_VARIABLES
        if environ.get(name, "").strip()
    )


def _host(value: str) -> str:
    """The host (and port) a proxy URL names. A bare `host:port` is read as http, as clients
    read it; anything unparseable gives "" rather than the value, which may hold a password."""
    text = value.strip()
    try:
        parts = urlsplit(text if "://" in text else f"http://{text}")
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}" if host and port else host

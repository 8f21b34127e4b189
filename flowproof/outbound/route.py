"""Which proxy, if any, record goes through to reach an upstream URL: pure, from an environment
mapping, applying the variables the way curl and the SDKs do.

    https upstream   https_proxy, else HTTPS_PROXY, else all_proxy, else ALL_PROXY
    http upstream    http_proxy, else HTTP_PROXY, else all_proxy, else ALL_PROXY
    no_proxy, else NO_PROXY: entries separated by commas or spaces; `*` exempts every host;
        `example.com` (or `.example.com`, `*.example.com`) exempts the host and its subdomains;
        an IP address or a CIDR range exempts an IP upstream in it; `host:port` or
        `[v6]:port` exempts that port only

The lower-case spelling wins, as in curl, urllib and httpx; one that is set but empty still
hides the upper-case one (it means "none"). Unlike curl, the upper-case HTTP_PROXY is read,
as httpx, requests and Go read it: curl skips it because a CGI script's environment carries
the `Proxy:` request header as HTTP_PROXY, and flowproof is not run as a CGI script. A leading
dot matches the name itself too, as curl has it (httpx exempts only the subdomains).

A loopback upstream (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`) always goes direct, as
Go's ProxyFromEnvironment has it: no proxy can reach this machine's loopback. A proxy written
without a scheme is an http:// one. Credentials in a proxy URL are used (aiohttp sends them as
Proxy-Authorization) and never shown: `Proxy.shown` hides them, and flowproof's redactor hides
them wherever else they appear. Only http:// and https://
proxies can be used (aiohttp has no SOCKS); another that would apply is a ConfigError naming
its variable.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from flowproof.core.errors import ConfigError
from flowproof.guards.redaction import url_credential

HTTPS_VARIABLES = ("https_proxy", "HTTPS_PROXY")
HTTP_VARIABLES = ("http_proxy", "HTTP_PROXY")
ALL_VARIABLES = ("all_proxy", "ALL_PROXY")
NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY")
"""Each scheme's variables in the order record reads them: lower case first, as curl."""
USABLE_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnusableProxy(ConfigError):
    """A proxy variable that applies to an upstream names a proxy flowproof cannot use."""


@dataclass(frozen=True, slots=True)
class Proxy:
    """One proxy, as a variable names it."""

    url: str
    """What aiohttp is given: the scheme added when the variable had none, credentials kept."""
    variable: str

    def __repr__(self) -> str:  # keep the credentials out of any log or traceback
        return f"Proxy({self.shown!r}, {self.variable})"

    @property
    def _parts(self) -> SplitResult:
        return urlsplit(self.url)

    @property
    def shown(self) -> str:
        """The URL with any credentials replaced by `***`: the only spelling flowproof prints."""
        parts = self._parts
        if "@" not in parts.netloc:
            return self.url
        host = parts.netloc.rpartition("@")[2]
        return parts._replace(netloc=f"***@{host}").geturl()

    @property
    def described(self) -> str:
        """`the proxy http://***@proxy.test:3128 (HTTPS_PROXY)`, for error lines."""
        return f"the proxy {self.shown} ({self.variable})"

    @property
    def credential(self) -> str | None:
        """The secret in the URL (hidden from all output by flowproof/guards/redaction.py)."""
        return url_credential(self.url)

    @property
    def problem(self) -> str | None:
        """Why aiohttp cannot use this proxy, or None."""
        parts = self._parts
        scheme = parts.scheme.lower()
        if scheme.startswith("socks"):
            return (
                f"{self.variable} names a SOCKS proxy ({self.shown}), and record's client "
                "speaks to HTTP proxies only; give it an http:// proxy, or add the upstream's "
                "host to NO_PROXY"
            )
        if scheme not in USABLE_SCHEMES:
            return (
                f"{self.variable} names a {scheme}:// proxy ({self.shown}); record can use an "
                "http:// or https:// proxy"
            )
        if not parts.hostname or not _has_valid_port(parts):
            return f"{self.variable} is not a proxy URL ({self.shown}); write http://host:port"
        return None


@dataclass(frozen=True, slots=True)
class Exemption:
    """One NO_PROXY entry: a host name (with its subdomains) or an IP range, maybe one port."""

    name: str | None
    network: IpNetwork | None
    port: int | None

    def covers(self, host: str, address: IpAddress | None, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.network is not None:
            return address is not None and address in self.network
        assert self.name is not None
        return host == self.name or host.endswith(f".{self.name}")


@dataclass(frozen=True, slots=True)
class ProxyRoutes:
    """The proxy variables of one environment, read once."""

    https: Proxy | None = None
    http: Proxy | None = None
    fallback: Proxy | None = None
    """ALL_PROXY: for an upstream whose own scheme has no variable."""
    exemptions: tuple[Exemption, ...] = ()
    exempt_all: bool = False
    """NO_PROXY held `*`."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ProxyRoutes:
        exemptions: list[Exemption] = []
        exempt_all = False
        found = _first_set(environ, NO_PROXY_VARIABLES)
        for entry in re.split(r"[\s,]+", found[1] if found else ""):
            if entry == "*":
                exempt_all = True
            elif entry:
                exemptions.append(exemption(entry))
        return cls(
            _proxy(environ, HTTPS_VARIABLES),
            _proxy(environ, HTTP_VARIABLES),
            _proxy(environ, ALL_VARIABLES),
            tuple(exemptions),
            exempt_all,
        )

    def proxy_for(self, url: str) -> Proxy | None:
        """The proxy a request to `url` goes through, or None to go direct. Raises
        UnusableProxy when the proxy that applies is one flowproof cannot use."""
        try:
            parts = urlsplit(url)
            scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        except ValueError:
            return None  # not a URL this can route; the client reports it as it is
        if scheme not in DEFAULT_PORTS or not host:
            return None
        host = host.rstrip(".")
        address = _address(host)
        if is_loopback(host, address) or self._exempts(
            host, address, port or DEFAULT_PORTS[scheme]
        ):
            return None
        proxy = (self.https if scheme == "https" else self.http) or self.fallback
        if proxy is not None and (problem := proxy.problem) is not None:
            raise UnusableProxy(f"record cannot reach {_origin(parts)}: {problem}")
        return proxy

    def check(self, urls: Iterable[str]) -> None:
        """Raise UnusableProxy for the first of `urls` whose proxy cannot be used."""
        for url in urls:
            self.proxy_for(url)

    def _exempts(self, host: str, address: IpAddress | None, port: int) -> bool:
        return self.exempt_all or any(e.covers(host, address, port) for e in self.exemptions)


def exemption(entry: str) -> Exemption:
    """A NO_PROXY entry: `name`, `.name`, `*.name`, `1.2.3.4`, `10.0.0.0/8`, `::1`,
    `[::1]`, `fd00::/8`, each maybe followed by `:port` (an IPv6 one only in brackets)."""
    text, port = _split_port(entry.strip().lower())
    try:
        return Exemption(None, ipaddress.ip_network(text, strict=False), port)
    except ValueError:
        pass
    name = text.removeprefix("*").removeprefix(".").rstrip(".")
    return Exemption(name, None, port)


def is_loopback(host: str, address: IpAddress | None = None) -> bool:
    """localhost, a name under .localhost, 127.0.0.0/8, ::1 (and ::ffff:127.x.y.z)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    if address is None:
        address = _address(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address is not None and address.is_loopback


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):  # [v6] or [v6]:port
        inside, _, rest = text[1:].partition("]")
        return inside, _port(rest.removeprefix(":"))
    if text.count(":") == 1:  # host:port (a bare IPv6 address has more colons)
        name, _, port = text.partition(":")
        return name, _port(port)
    return text, None


def _has_valid_port(parts: SplitResult) -> bool:
    try:
        parts.port  # noqa: B018 (reading it is the check: it raises for a port out of range)
    except ValueError:
        return False
    return True


def _port(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _address(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _first_set(environ: Mapping[str, str], names: tuple[str, str]) -> tuple[str, str] | None:
    """(name, value) of the first spelling that is set, even empty; None if neither is."""
    for name in names:
        if name in environ:
            return name, environ[name].strip()
    return None


def _proxy(environ: Mapping[str, str], names: tuple[str, str]) -> Proxy | None:
    found = _first_set(environ, names)
    if found is None or not found[1]:
        return None
    name, value = found
    return Proxy(value if "://" in value else f"http://{value}", name)


def _origin(parts: SplitResult) -> str:
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"

"""`agent.allow_egress`: parsing its entries and deciding a destination against them. Pure.

An entry is one of

    host:port    api.example.com:443       a name, resolved by flowproof at run start and pinned
    ip:port      198.51.100.9:443
    cidr:port    10.0.0.0/8:443
    [v6]:port    [2001:db8::1]:443         (a v6 cidr too: [2001:db8::/32]:443)
    host | ip | cidr | v6                  a bare one: any port

and may hold `${VAR}` references, resolved when the flow runs and never stored resolved.
Loopback (127.0.0.0/8, ::1) is exempt wholesale and needs no entry; an IPv4 address written as
v4-mapped IPv6 (`::ffff:198.51.100.9`) is the IPv4 address, on both sides of the comparison.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_LABEL = r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*\.?$")
_REF = re.compile(r"\$\{[^}]+\}")
FORMS = "host:port, ip:port, cidr:port, [v6]:port, or a bare host, ip or cidr (any port)"


class EntryError(ValueError):
    """An allow_egress entry that is none of the forms; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One allow_egress entry, parsed."""

    text: str
    """The entry as the spec wrote it (after `${VAR}` resolution, when parsed at run time)."""
    host: str | None
    """A name to resolve (lower case, no trailing dot); None for an address or a cidr."""
    network: IPNetwork | None
    """The address (as a /32 or /128) or cidr; None for a name."""
    port: int | None
    """None: any port."""

    def __str__(self) -> str:
        return self.text


def normalise(address: IPAddress) -> IPAddress:
    """A v4-mapped IPv6 address is the IPv4 address it maps."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_local(address: IPAddress) -> bool:
    """Loopback, exempt wholesale; also the unspecified address, which Linux connects to the
    local host (a connect to 0.0.0.0:8080 reaches 127.0.0.1:8080)."""
    address = normalise(address)
    return address.is_loopback or address.is_unspecified


def parse_entry(text: str) -> Rule:
    """One entry → a Rule; an EntryError names what is wrong. `${VAR}` must be resolved first
    (use `check_entry` on text that may still hold references)."""
    entry = text.strip()
    if not entry:
        raise EntryError("an empty entry")
    host, port = _split_port(entry)
    network = _network(host)
    if network is not None:
        return Rule(entry, None, network, port)
    if not _HOST.match(host) or host.replace(".", "").isdigit():
        raise EntryError(f"'{host}' is not a host name, an IP address or a cidr")
    return Rule(entry, host.lower().rstrip("."), None, port)


def check_entry(text: str) -> None:
    """Validate an entry as written in a spec: each `${VAR}` stands for a host name here, and
    the rest of the entry must be well formed."""
    parse_entry(_REF.sub("placeholder", text))


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        close = entry.find("]")
        if close < 0:
            raise EntryError(f"'{entry}' opens '[' and never closes it")
        host, rest = entry[1:close], entry[close + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise EntryError(f"'{entry}': expected ':port' after ']'")
        return host, _port(rest[1:], entry)
    if entry.count(":") > 1:  # a bare IPv6 address (or cidr): any port
        return entry, None
    if ":" in entry:
        host, port = entry.rsplit(":", 1)
        return host, _port(port, entry)
    return entry, None


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise EntryError(f"'{entry}': the port must be a number from 1 to 65535, not '{text}'")
    return int(text)


def _network(text: str) -> IPNetwork | None:
    try:
        if "/" in text:
            network = ipaddress.ip_network(text, strict=False)
        else:
            network = ipaddress.ip_network(normalise(ipaddress.ip_address(text)))
    except ValueError:
        if "/" in text:
            raise EntryError(f"'{text}' is not a valid cidr") from None
        return None
    if isinstance(network, ipaddress.IPv6Network):
        mapped = network.network_address.ipv4_mapped
        if mapped is not None and network.prefixlen >= 96:
            return ipaddress.ip_network(f"{mapped}/{network.prefixlen - 96}", strict=False)
    return network


@dataclass(frozen=True, slots=True)
class Policy:
    """The rules of one flow, with each host name's pinned addresses."""

    rules: tuple[Rule, ...]
    pinned: Mapping[str, frozenset[IPAddress]]
    """Host name → the addresses it resolved to when the flow started (or was refreshed)."""

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(rule.host for rule in self.rules if rule.host))

    def allowing(self, address: IPAddress, port: int) -> Rule | None:
        """The first rule that allows `address`:`port`; None when no rule does."""
        address = normalise(address)
        for rule in self.rules:
            if rule.port is not None and rule.port != port:
                continue
            if rule.network is not None and address in rule.network:
                return rule
            if rule.host is not None and address in self.pinned.get(rule.host, frozenset()):
                return rule
        return None

    def hosts_for_port(self, port: int) -> tuple[str, ...]:
        """The host names whose rules would allow `port`: re-resolved once on a miss."""
        return tuple(
            dict.fromkeys(
                rule.host
                for rule in self.rules
                if rule.host is not None and rule.port in (None, port)
            )
        )

    def with_pins(self, pinned: Mapping[str, Iterable[IPAddress]]) -> Policy:
        merged = dict(self.pinned)
        merged.update({host: frozenset(map(normalise, found)) for host, found in pinned.items()})
        return Policy(self.rules, merged)

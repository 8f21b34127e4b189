"""allow_egress entries, their matching, DNS pinning, and socket addresses (pure layers)."""

from __future__ import annotations

import ipaddress
import socket
import struct

import pytest

from flowproof.containment.pins import PinnedPolicy
from flowproof.containment.policy import EntryError, Policy, check_entry, is_local, parse_entry
from flowproof.containment.sockaddr import parse_sockaddr

ip = ipaddress.ip_address


def policy(*entries: str, pinned: dict[str, set[str]] | None = None) -> Policy:
    pins = {host: frozenset(map(ip, found)) for host, found in (pinned or {}).items()}
    return Policy(tuple(parse_entry(entry) for entry in entries), pins)


@pytest.mark.parametrize(
    ("entry", "host", "network", "port"),
    [
        ("api.example.com:443", "api.example.com", None, 443),
        ("API.Example.com.", "api.example.com", None, None),
        ("198.51.100.9:443", None, "198.51.100.9/32", 443),
        ("198.51.100.9", None, "198.51.100.9/32", None),
        ("10.0.0.0/8:443", None, "10.0.0.0/8", 443),
        ("10.0.0.0/8", None, "10.0.0.0/8", None),
        ("[2001:db8::1]:443", None, "2001:db8::1/128", 443),
        ("2001:db8::1", None, "2001:db8::1/128", None),
        ("[2001:db8::/32]:443", None, "2001:db8::/32", 443),
        ("::ffff:198.51.100.9", None, "198.51.100.9/32", None),
        ("[::ffff:198.51.100.0/120]:53", None, "198.51.100.0/24", 53),
    ],
)
def test_every_entry_form_parses(
    entry: str, host: str | None, network: str | None, port: int | None
) -> None:
    rule = parse_entry(entry)
    assert (rule.host, str(rule.network) if rule.network else None, rule.port) == (
        host,
        network,
        port,
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "api.example.com:0",
            "'api.example.com:0': the port must be a number from 1 to 65535, not '0'",
        ),
        (
            "api.example.com:https",
            "'api.example.com:https': the port must be a number from 1 to 65535, not 'https'",
        ),
        ("10.0.0.0/33", "'10.0.0.0/33' is not a valid cidr"),
        ("[2001:db8::1:443", "'[2001:db8::1:443' opens '[' and never closes it"),
        ("[2001:db8::1]443", "'[2001:db8::1]443': expected ':port' after ']'"),
        ("exa mple.com", "'exa mple.com' is not a host name, an IP address or a cidr"),
        ("999.1.1.1:80", "'999.1.1.1' is not a host name, an IP address or a cidr"),
        ("", "an empty entry"),
    ],
)
def test_a_malformed_entry_says_what_is_wrong(entry: str, message: str) -> None:
    with pytest.raises(EntryError) as raised:
        parse_entry(entry)
    assert str(raised.value) == message


def test_a_reference_stands_for_a_host_when_the_spec_is_checked() -> None:
    check_entry("${SERVICE_HOST}:443")
    check_entry("${SERVICE_HOST}")
    with pytest.raises(EntryError):
        check_entry("${SERVICE_HOST}:port")


def test_matching_by_address_cidr_port_and_any_port() -> None:
    rules = policy("198.51.100.9:443", "203.0.113.0/24", "[2001:db8::/32]:53")
    assert rules.allowing(ip("198.51.100.9"), 443) is not None
    assert rules.allowing(ip("198.51.100.9"), 80) is None
    assert rules.allowing(ip("203.0.113.77"), 1234) is not None
    assert rules.allowing(ip("2001:db8::5"), 53) is not None
    assert rules.allowing(ip("2001:db8::5"), 54) is None
    assert rules.allowing(ip("192.0.2.1"), 443) is None


def test_a_v4_mapped_destination_matches_its_ipv4_rule() -> None:
    assert policy("198.51.100.9:443").allowing(ip("::ffff:198.51.100.9"), 443) is not None
    assert policy("198.51.100.9:443").allowing(ip("::ffff:198.51.100.10"), 443) is None


def test_loopback_and_the_unspecified_address_are_local() -> None:
    for text in ("127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::"):
        assert is_local(ip(text)), text
    for text in ("198.51.100.9", "::ffff:198.51.100.9", "2001:db8::1"):
        assert not is_local(ip(text)), text


def test_a_host_rule_matches_its_pinned_addresses_only() -> None:
    rules = policy("api.example.com:443", pinned={"api.example.com": {"198.51.100.9"}})
    assert rules.allowing(ip("198.51.100.9"), 443) is not None
    assert rules.allowing(ip("198.51.100.10"), 443) is None


def test_names_are_pinned_at_start_and_re_resolved_once_on_a_miss() -> None:
    answers = [{"198.51.100.9"}, {"198.51.100.10"}]
    asked: list[str] = []

    def lookup(host: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        asked.append(host)
        return set(map(ip, answers[min(len(asked), len(answers)) - 1]))

    pinned = PinnedPolicy(policy("api.example.com:443", "other.example:80"), lookup)
    assert asked == ["api.example.com", "other.example"]
    assert pinned.policy.allowing(ip("198.51.100.10"), 443) is None
    # A miss on port 443 re-resolves the names whose rules cover 443, and only those.
    assert pinned.retry(443).allowing(ip("198.51.100.10"), 443) is not None
    assert asked[2:] == ["api.example.com"]


def test_a_name_that_resolves_to_nothing_is_reported() -> None:
    pinned = PinnedPolicy(policy("nowhere.invalid:443"), lambda host: set())
    assert pinned.unresolved() == ("nowhere.invalid",)


def _inet(address: str, port: int) -> bytes:
    return (
        struct.pack("<H", socket.AF_INET)
        + struct.pack(">H", port)
        + socket.inet_aton(address)
        + bytes(8)
    )


def _inet6(address: str, port: int) -> bytes:
    return (
        struct.pack("<H", socket.AF_INET6)
        + struct.pack(">HI", port, 0)
        + socket.inet_pton(socket.AF_INET6, address)
        + bytes(4)
    )


def test_socket_addresses_parse_as_the_kernel_reads_them() -> None:
    assert str(parse_sockaddr(_inet("203.0.113.7", 8080))) == "203.0.113.7:8080"
    assert str(parse_sockaddr(_inet6("2001:db8::1", 443))) == "[2001:db8::1]:443"
    assert str(parse_sockaddr(_inet6("::ffff:203.0.113.7", 443))) == "203.0.113.7:443"
    assert str(parse_sockaddr(struct.pack("<H", 1) + b"/run/x.sock\0")) == "unix:/run/x.sock"
    assert str(parse_sockaddr(struct.pack("<H", 1) + b"\0bus")) == "unix:@bus"
    assert str(parse_sockaddr(struct.pack("<H", 16) + bytes(10))) == "AF_NETLINK"
    assert parse_sockaddr(_inet("203.0.113.7", 80)[:15]) is None  # too short: EINVAL
    assert parse_sockaddr(b"\x02") is None


def test_a_pending_signal_counts_only_when_caught_and_not_blocked() -> None:
    """The supervisor's watcher interrupts a blocking connect only for a signal the task would
    run a handler for now: one it blocks stays pending and counts for nothing."""
    import signal
    import threading

    from flowproof.containment.supervisor import _caught_signal_pending

    me = threading.get_native_id()
    previous = signal.signal(signal.SIGUSR1, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        assert not _caught_signal_pending(me)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        assert signal.SIGUSR1 in signal.sigpending()
        assert not _caught_signal_pending(me)  # pending and caught, but blocked
    finally:
        signal.sigwait({signal.SIGUSR1})
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        signal.signal(signal.SIGUSR1, previous)

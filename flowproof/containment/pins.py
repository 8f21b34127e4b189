"""Host names of allow_egress, resolved by flowproof and pinned for the supervisor.

flowproof resolves every declared name when the flow starts (the agent's own lookups decide
nothing: the supervisor compares the address the agent connects to with the pinned set).
The set is refreshed when it is older than REFRESH_SECONDS (getaddrinfo gives no TTL, so this
is the floor harden-runner uses for one), and a refused destination whose port a host rule
covers re-resolves those names once, synchronously, before it is refused: CDNs rotate
addresses, and the agent's resolver and flowproof's can disagree for a moment.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterable

from flowproof.containment.policy import IPAddress, Policy

REFRESH_SECONDS = 30.0
Lookup = Callable[[str], Iterable[IPAddress]]


def system_lookup(host: str) -> frozenset[IPAddress]:
    """The addresses the system resolver gives for `host`; empty when it gives none."""
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return frozenset()
    return frozenset(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in found)


class PinnedPolicy:
    """The flow's policy with its names' addresses, safe to read from the supervisor's threads."""

    def __init__(self, policy: Policy, lookup: Lookup = system_lookup) -> None:
        self._lookup = lookup
        self._lock = threading.Lock()
        self._policy = policy
        self._resolved_at = 0.0
        self._resolve(policy.hosts)

    @property
    def policy(self) -> Policy:
        if self._policy.hosts and time.monotonic() - self._resolved_at > REFRESH_SECONDS:
            self._resolve(self._policy.hosts)
        return self._policy

    def unresolved(self) -> tuple[str, ...]:
        """Declared names that resolved to nothing (a warning, not an error: the agent may
        not need them, and a miss re-resolves)."""
        policy = self._policy
        return tuple(host for host in policy.hosts if not policy.pinned.get(host))

    def retry(self, port: int) -> Policy:
        """Re-resolve, once, the names whose rules cover `port`; the policy after it."""
        hosts = self._policy.hosts_for_port(port)
        if hosts:
            self._resolve(hosts)
        return self._policy

    def _resolve(self, hosts: Iterable[str]) -> None:
        found = {host: frozenset(self._lookup(host)) for host in hosts}
        with self._lock:
            self._policy = self._policy.with_pins(found)
            self._resolved_at = time.monotonic()

"""Socket addresses as the agent passed them (raw `struct sockaddr` bytes) → what they name. Pure.

The supervisor decides on this parse of its COPY of the bytes, and then hands the kernel those
same bytes, never a re-encoding, so what was judged is exactly what is performed.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from flowproof.containment.policy import IPAddress, normalise

AF_UNSPEC, AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 0, 1, 2, 10, 16
SOCKADDR_MAX = 128
"""sizeof(struct sockaddr_storage): the kernel refuses a longer address with EINVAL."""
_INET_LEN, _INET6_LEN = 16, 24
"""The shortest sockaddr_in / sockaddr_in6 the kernel accepts (v6 without sin6_scope_id)."""

FAMILY_NAMES = {
    0: "AF_UNSPEC",
    1: "AF_UNIX",
    2: "AF_INET",
    3: "AF_AX25",
    4: "AF_IPX",
    5: "AF_APPLETALK",
    9: "AF_X25",
    10: "AF_INET6",
    16: "AF_NETLINK",
    17: "AF_PACKET",
    29: "AF_CAN",
    30: "AF_TIPC",
    31: "AF_BLUETOOTH",
    38: "AF_ALG",
    40: "AF_VSOCK",
    42: "AF_QIPCRTR",
    44: "AF_XDP",
}


def family_name(family: int) -> str:
    return FAMILY_NAMES.get(family, f"address family {family}")


@dataclass(frozen=True, slots=True)
class SockAddr:
    family: int
    ip: IPAddress | None = None
    """For AF_INET/AF_INET6: the address, v4-mapped IPv6 already turned into IPv4."""
    port: int | None = None
    path: str | None = None
    """For AF_UNIX: the path; `@name` for an abstract socket, "" for an unnamed one."""

    def __str__(self) -> str:
        if self.ip is not None:
            host = f"[{self.ip}]" if self.ip.version == 6 else str(self.ip)
            return f"{host}:{self.port}"
        if self.family == AF_UNIX:
            return f"unix:{self.path}"
        return family_name(self.family)


def family_of(raw: bytes) -> int | None:
    return struct.unpack_from("<H", raw)[0] if len(raw) >= 2 else None


def parse_sockaddr(raw: bytes) -> SockAddr | None:
    """What `raw` names; None when it is too short for its family (the kernel says EINVAL)."""
    family = family_of(raw)
    if family is None:
        return None
    if family == AF_INET:
        if len(raw) < _INET_LEN:
            return None
        port = struct.unpack_from(">H", raw, 2)[0]
        return SockAddr(family, ipaddress.IPv4Address(raw[4:8]), port)
    if family == AF_INET6:
        if len(raw) < _INET6_LEN:
            return None
        port = struct.unpack_from(">H", raw, 2)[0]
        return SockAddr(family, normalise(ipaddress.IPv6Address(raw[8:24])), port)
    if family == AF_UNIX:
        body = raw[2:]
        if not body:
            return SockAddr(family, path="")
        if body[0] == 0:
            return SockAddr(family, path="@" + body[1:].decode("utf-8", "replace"))
        return SockAddr(family, path=body.split(b"\0", 1)[0].decode("utf-8", "replace"))
    return SockAddr(family)


def unix_address(path: bytes) -> bytes:
    """A sockaddr_un for `path` (NUL-terminated), for a relative path rewritten absolute."""
    return struct.pack("<H", AF_UNIX) + path + b"\0"

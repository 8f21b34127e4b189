"""The network calls the supervisor decides, and performs itself when they are allowed.

Each handler reads everything it needs from the agent's memory first, takes the duplicate of
the socket, checks the notification is still valid, and only then decides and acts (see
supervisor.py for why). A refused connect answers ECONNREFUSED (clients treat it as a closed
port, at once); any other refused call answers EPERM, as a local firewall would.

What is allowed: any destination on loopback (127/8, ::1; and 0.0.0.0, which Linux connects
locally), any AF_UNIX or AF_NETLINK address, and what allow_egress declares. bind and listen
are allowed on loopback only: a listener on the wildcard or a public address is inbound
exposure, refused and reported. A relative AF_UNIX path is resolved against the agent's
working directory, not the supervisor's.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from collections.abc import Callable
from contextlib import ExitStack

from flowproof.containment import _linux
from flowproof.containment.policy import is_local
from flowproof.containment.sockaddr import (
    AF_INET,
    AF_INET6,
    AF_UNIX,
    SOCKADDR_MAX,
    SockAddr,
    family_name,
    parse_sockaddr,
    unix_address,
)
from flowproof.containment.supervisor import Call, Handler, Supervisor

PAYLOAD_MAX = 4 << 20
"""Bytes of one send copied; a longer stream send is a short write (which the caller's loop
handles), and no datagram socket accepts one this long anyway."""
IOV_MAX = 1024
CONTROL_MAX = 64 << 10
VLEN_MAX = 1024
MSG_DONTWAIT = 0x40
SOL_SOCKET, SCM_RIGHTS, SCM_CREDENTIALS = 1, 1, 2
_MSGHDR, _MMSGHDR = 56, 64
SOCK_TYPES = {
    1: "SOCK_STREAM",
    2: "SOCK_DGRAM",
    3: "SOCK_RAW",
    5: "SOCK_SEQPACKET",
    10: "SOCK_PACKET",
}

Verdict = bytes | int
"""The address to perform with (the agent's exact bytes, or a rewritten unix path), or an errno."""


def _judge(call: Call, sup: Supervisor, verb: str, raw: bytes, refusal: int) -> Verdict:
    """Decide one destination: its bytes to perform with, or the errno to answer."""
    address = parse_sockaddr(raw)
    if address is None:
        return errno.EINVAL
    if address.family == AF_UNIX:
        return _unix(call, sup, raw, address)
    if address.ip is None or address.port is None:
        return raw  # netlink, AF_UNSPEC (dissolve a UDP association), or one the socket refuses
    if is_local(address.ip):
        sup.findings.touch_local(str(address))
        return raw
    if sup.policy.policy.allowing(address.ip, address.port) is not None:
        return raw
    if sup.policy.retry(address.port).allowing(address.ip, address.port) is not None:
        return raw
    sup.findings.block(verb, str(address))
    return refusal


def _unix(call: Call, sup: Supervisor, raw: bytes, address: SockAddr) -> Verdict:
    path = address.path or ""
    sup.findings.touch_local(str(address))
    if not path or path.startswith(("@", "/")):
        return raw
    # The supervisor would resolve a relative path against its own working directory.
    absolute = os.path.join(f"/proc/{call.tid}/cwd", path).encode()
    if len(absolute) >= 108:
        return errno.ENAMETOOLONG
    return unix_address(absolute)


def _address(call: Call, pointer: int, length: int) -> bytes | int:
    if length < 0 or length > SOCKADDR_MAX:
        return errno.EINVAL
    raw = call.read(pointer, length)
    return raw if len(raw) == length else errno.EFAULT


def _blocking(duplicate: int, flags: int = 0) -> bool:
    return not (fcntl.fcntl(duplicate, fcntl.F_GETFL) & os.O_NONBLOCK or flags & MSG_DONTWAIT)


def on_connect(call: Call, sup: Supervisor) -> None:
    raw = _address(call, call.args[1], call.int_arg(2))
    if isinstance(raw, int):
        return call.fail(raw)
    duplicate = call.fetch(call.int_arg(0))
    try:
        if not call.valid():
            return
        verdict = _judge(call, sup, "connect", raw, errno.ECONNREFUSED)
        if isinstance(verdict, int):
            return call.fail(verdict)
        address = parse_sockaddr(raw)
        remote = address is not None and address.ip is not None and not is_local(address.ip)
        if remote and _blocking(duplicate):
            # Up to the SYN timeout: on a worker, so the receiver keeps answering.
            owned, target = duplicate, verdict
            sup.in_background(
                call, owned, lambda: _linux.sock_connect(owned, target), interruptible=True
            )
            duplicate = -1
            return
        if remote:  # non-blocking: EINPROGRESS at once
            call.reply(_linux.sock_connect(duplicate, verdict))
        else:
            call.reply(_linux.sock_connect_now(duplicate, verdict))
    finally:
        if duplicate >= 0:
            os.close(duplicate)


def on_bind(call: Call, sup: Supervisor) -> None:
    raw = _address(call, call.args[1], call.int_arg(2))
    if isinstance(raw, int):
        return call.fail(raw)
    with call.fd(call.int_arg(0)) as duplicate:
        if not call.valid():
            return
        address = parse_sockaddr(raw)
        if address is not None and address.ip is not None and not address.ip.is_loopback:
            sup.findings.block("bind", str(address))
            return call.fail(errno.EPERM)
        verdict = _judge(call, sup, "bind", raw, errno.EPERM) if address else errno.EINVAL
        if isinstance(verdict, int):
            return call.fail(verdict)
        call.reply(_linux.sock_bind(duplicate, verdict))


def on_listen(call: Call, sup: Supervisor) -> None:
    with call.fd(call.int_arg(0)) as duplicate:
        if not call.valid():
            return
        name = _linux.sock_name(duplicate)
        address = parse_sockaddr(name) if name else None
        if address is not None and address.ip is not None:
            if address.port == 0:  # unbound: listen() binds the wildcard address by itself
                sup.findings.block("listen", f"{address.ip}:<any port> (an unbound socket)")
                return call.fail(errno.EPERM)
            if not address.ip.is_loopback:
                sup.findings.block("listen", str(address))
                return call.fail(errno.EPERM)
        call.reply(_linux.sock_listen(duplicate, call.int_arg(1)))


def on_sendto(call: Call, sup: Supervisor) -> None:
    raw = _address(call, call.args[4], call.int_arg(5))
    if isinstance(raw, int):
        return call.fail(raw)
    length = min(call.args[2], PAYLOAD_MAX)
    payload = call.read(call.args[1], length)
    if len(payload) < length:
        return call.fail(errno.EFAULT)
    flags = call.int_arg(3)
    _send(call, sup, "sendto", [(raw, payload, b"")], flags, writeback=None)


def on_sendmsg(call: Call, sup: Supervisor) -> None:
    header = call.read(call.args[1], _MSGHDR)
    if len(header) < _MSGHDR:
        return call.fail(errno.EFAULT)
    message = _message(call, header)
    if isinstance(message, int):
        return call.fail(message)
    _send(call, sup, "sendmsg", [message], call.int_arg(2), writeback=None)


def on_sendmmsg(call: Call, sup: Supervisor) -> None:
    count = min(call.args[2] & 0xFFFFFFFF, VLEN_MAX)
    table = call.read(call.args[1], count * _MMSGHDR)
    if len(table) < count * _MMSGHDR:
        return call.fail(errno.EFAULT)
    messages: list[Message] = []
    for index in range(count):
        message = _message(call, table[index * _MMSGHDR : index * _MMSGHDR + _MSGHDR])
        if isinstance(message, int):
            if not messages:
                return call.fail(message)
            break
        messages.append(message)
    _send(call, sup, "sendmmsg", messages, call.int_arg(3), writeback=call.args[1])


Message = tuple[bytes | None, bytes, bytes]
"""(destination or None, the gathered payload, the control data), copied from the agent."""


def _message(call: Call, header: bytes) -> Message | int:
    name_at, name_length, iov_at, iov_count, control_at, control_length = struct.unpack_from(
        "<QI4xQQQQ", header
    )
    name = None
    if name_at and name_length:
        raw = _address(call, name_at, name_length)
        if isinstance(raw, int):
            return raw
        name = raw
    if iov_count > IOV_MAX:
        return errno.EMSGSIZE
    vectors = call.read(iov_at, iov_count * 16) if iov_count else b""
    if len(vectors) < iov_count * 16:
        return errno.EFAULT
    payload = bytearray()
    for index in range(iov_count):
        base, length = struct.unpack_from("<QQ", vectors, index * 16)
        length = min(length, PAYLOAD_MAX - len(payload))
        chunk = call.read(base, length)
        if len(chunk) < length:
            return errno.EFAULT
        payload += chunk
    if control_length > CONTROL_MAX:
        return errno.ENOBUFS
    control = call.read(control_at, control_length) if control_at and control_length else b""
    if len(control) < (control_length if control_at else 0):
        return errno.EFAULT
    return name, bytes(payload), control


def _send(
    call: Call,
    sup: Supervisor,
    verb: str,
    messages: list[Message],
    flags: int,
    writeback: int | None,
) -> None:
    stack = ExitStack()
    try:
        duplicate = stack.enter_context(call.fd(call.int_arg(0)))
        if not call.valid():
            return
        prepared: list[tuple[bytes | None, bytes, bytes]] = []
        refusal = 0
        for name, payload, control in messages:
            destination: bytes | None = None
            if name is not None:
                verdict = _judge(call, sup, verb, name, errno.EPERM)
                if isinstance(verdict, int):
                    refusal = verdict
                    break
                destination = verdict
            translated = _translate_control(call, control, stack)
            if isinstance(translated, int):
                refusal = translated
                break
            prepared.append((destination, payload, translated))
        if not prepared:
            return call.fail(refusal) if refusal else call.reply(0)

        def perform() -> int:
            sent = 0
            for index, (destination, payload, control) in enumerate(prepared):
                result = _linux.sock_sendmsg(duplicate, destination, payload, control, flags)
                if result < 0:
                    return result if index == 0 else index
                if writeback is None:
                    return result
                _linux.write_memory(
                    call.tid, writeback + index * _MMSGHDR + _MSGHDR, struct.pack("<I", result)
                )
                sent += 1
            return sent

        if _blocking(duplicate, flags):
            owned = os.dup(duplicate)
            extra = stack.pop_all()
            sup.in_background(call, owned, lambda: _run_then_close(perform, extra))
            return
        call.reply(perform())
    finally:
        stack.close()


def _run_then_close(job: Callable[[], int], stack: ExitStack) -> int:
    with stack:
        return job()


def _translate_control(call: Call, control: bytes, stack: ExitStack) -> bytes | int:
    """The agent's control messages with every SCM_RIGHTS fd replaced by our duplicate of it;
    SCM_CREDENTIALS refused (the kernel would check them against the supervisor)."""
    out = bytearray()
    offset = 0
    while offset + 16 <= len(control):
        length, level, kind = struct.unpack_from("<Qii", control, offset)
        if length < 16 or offset + length > len(control):
            return errno.EINVAL
        data = control[offset + 16 : offset + length]
        if level == SOL_SOCKET and kind == SCM_CREDENTIALS:
            return errno.EPERM
        if level == SOL_SOCKET and kind == SCM_RIGHTS:
            fds = struct.unpack(f"<{len(data) // 4}i", data[: len(data) // 4 * 4])
            ours = [stack.enter_context(call.fd(fd)) for fd in fds]
            data = struct.pack(f"<{len(ours)}i", *ours)
        entry = struct.pack("<Qii", 16 + len(data), level, kind) + data
        out += entry + b"\0" * (-len(entry) % 8)  # CMSG_SPACE: each entry 8-byte aligned
        offset += (length + 7) & ~7
    return bytes(out)


def on_socket(call: Call, sup: Supervisor) -> None:
    """Only a family or type the filter refuses reaches here: report it, refuse it."""
    family = call.args[0] & 0xFFFFFFFF
    kind = call.args[1] & 0xF
    if family in (AF_INET, AF_INET6):
        sup.findings.block("socket", f"({family_name(family)}, {SOCK_TYPES.get(kind, kind)})")
        return call.fail(errno.EPERM)
    sup.findings.block("socket", f"({family_name(family)})")
    call.fail(errno.EAFNOSUPPORT)


I386_NAMES = {
    102: "socketcall",
    345: "sendmmsg",
    359: "socket",
    361: "bind",
    362: "connect",
    363: "listen",
    369: "sendto",
    370: "sendmsg",
}


def on_foreign(call: Call, sup: Supervisor) -> None:
    """A call through another ABI: i386 `int 0x80`, or x32. Never run, always reported."""
    if call.arch != 0xC000003E:
        name = I386_NAMES.get(call.nr)
        what = f"i386 system call {call.nr}" + (f" ({name})" if name else "")
    else:
        what = f"x32 system call {call.nr & ~0x40000000}"
    sup.findings.block("syscall", what)
    call.fail(errno.ENOSYS)


HANDLERS: dict[str, Handler] = {
    "socket": on_socket,
    "connect": on_connect,
    "bind": on_bind,
    "listen": on_listen,
    "sendto": on_sendto,
    "sendmsg": on_sendmsg,
    "sendmmsg": on_sendmmsg,
}

"""Linux system calls the standard library does not wrap, and the structures they take (the
C library itself is loaded once, in host/libc.py, which also holds prctl).

x86_64 only (the syscall numbers, the ioctl numbers and the struct layouts below are that
ABI's); containment/probe.py says "not contained" on any other machine before anything here
is called. Every wrapper returns a value or raises OSError with the errno: none prints, none
retries silently.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import struct
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

from flowproof.host.libc import libc

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

# x86_64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl).
SYS_process_vm_readv = 310
SYS_process_vm_writev = 311
SYS_seccomp = 317
SYS_pidfd_open = 434
SYS_pidfd_getfd = 438
SYS_landlock_create_ruleset = 444
SYS_landlock_restrict_self = 446

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 1 << 5
"""5.19+: once the supervisor has received a notification, only a fatal signal interrupts the
waiting call. Without it a signal withdraws the notification and CPython's connect() then
reports success on a socket that never connected (PEP 475 retries see EISCONN-less state)."""
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1
SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP = 1

SECCOMP_IOCTL_NOTIF_RECV = 0xC0502100
SECCOMP_IOCTL_NOTIF_SEND = 0xC0182101
SECCOMP_IOCTL_NOTIF_ID_VALID = 0x40082102
SECCOMP_IOCTL_NOTIF_SET_FLAGS = 0x40082104

PIDFD_THREAD = os.O_EXCL
"""6.9+: pidfd_open of a thread id (a notification names the thread, not its process)."""

LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11
"""Handled, with no rule granting it, where the kernel has no scopes: a domain needs one handled
right, and nothing an agent does makes block devices."""
LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
LANDLOCK_SCOPE_SIGNAL = 1 << 1


class SeccompData(ctypes.Structure):
    _fields_ = [
        ("nr", ctypes.c_int32),
        ("arch", ctypes.c_uint32),
        ("instruction_pointer", ctypes.c_uint64),
        ("args", ctypes.c_uint64 * 6),
    ]


class SeccompNotif(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("data", SeccompData),
    ]


class SeccompNotifResp(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("val", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
    ]


class SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.POINTER(Iovec)),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class LandlockRulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


assert ctypes.sizeof(SeccompNotif) == 80 and ctypes.sizeof(SeccompNotifResp) == 24
assert ctypes.sizeof(Msghdr) == 56


def _syscall(number: int, *args: Any) -> int:
    function = libc().syscall
    function.restype = ctypes.c_long
    result = int(function(ctypes.c_long(number), *args))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def install_filter(program: bytes, flags: int) -> int:
    """seccomp(SET_MODE_FILTER, flags, program) → the listener fd (with NEW_LISTENER)."""
    count = len(program) // 8
    buffer = (SockFilter * count).from_buffer_copy(program)
    fprog = SockFprog(count, ctypes.cast(buffer, ctypes.POINTER(SockFilter)))
    return _syscall(
        SYS_seccomp,
        ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
        ctypes.c_uint(flags),
        ctypes.byref(fprog),
    )


@cache
def _ioctl_function() -> Any:
    # Declared once: the supervisor calls this for every notification.
    function = libc().ioctl
    function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
    function.restype = ctypes.c_int
    return function


def _ioctl(fd: int, request: int, arg: int) -> int:
    result = int(_ioctl_function()(fd, request, arg))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


class Notification(NamedTuple):
    """One `struct seccomp_notif`, unpacked: read in one call, where a ctypes structure costs
    an object per field access (this is the receive loop's hot path)."""

    id: int
    pid: int
    """The trapping THREAD's id."""
    flags: int
    nr: int
    arch: int
    instruction_pointer: int
    a0: int
    a1: int
    a2: int
    a3: int
    a4: int
    a5: int

    @property
    def args(self) -> tuple[int, ...]:
        return self[6:]


_NOTIFICATION = struct.Struct("=QIIiIQ6Q")
"""struct seccomp_notif: id, pid, flags, then struct seccomp_data (nr, arch, ip, args[6])."""
_RESPONSE = struct.Struct("=QqiI")
"""struct seccomp_notif_resp: id, val, error, flags."""
assert _NOTIFICATION.size == ctypes.sizeof(SeccompNotif) == 80 and _RESPONSE.size == 24


Receive = Callable[[], Notification | int]
"""Receives the next notification → it, or the errno the receive failed with."""


def notification(raw: bytes | bytearray) -> Notification:
    """The 80 bytes of a struct seccomp_notif, unpacked."""
    return tuple.__new__(Notification, _NOTIFICATION.unpack_from(raw))  # less a Python frame


def receiver(listener: int) -> Receive:
    """The receive loop's whole cost per notification, in Python. fcntl.ioctl (the standard
    library's, with the GIL released while it blocks) costs a fraction of a ctypes call."""
    buffer = bytearray(_NOTIFICATION.size)
    empty = bytes(_NOTIFICATION.size)
    ioctl, unpack, new = fcntl.ioctl, _NOTIFICATION.unpack_from, tuple.__new__

    def receive() -> Notification | int:
        buffer[:] = empty  # the kernel refuses a buffer that is not zeroed
        try:
            ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, buffer)
        except OSError as exc:
            return exc.errno or errno.EIO
        return new(Notification, unpack(buffer))  # Notification._make, less a Python frame

    return receive


def notif_send(listener: int, notif_id: int, value: int, error: int, flags: int = 0) -> bool:
    """Answer one notification; False when it is gone (the task died, or was killed)."""
    try:
        response = _RESPONSE.pack(notif_id, value, error, flags)
        fcntl.ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, response)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    return True


def notif_id_valid(listener: int, notif_id: int) -> bool:
    """Whether the task that raised `notif_id` still waits for it. Checked AFTER every read of
    its memory: a task that died and whose pid was reused would otherwise have its successor's
    memory read as its own arguments."""
    try:
        fcntl.ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, struct.pack("=Q", notif_id))
    except OSError:
        return False
    return True


def set_sync_wake_up(listener: int) -> bool:
    """6.6+: wake the supervisor on the trapping task's CPU. The flag is passed BY VALUE (a
    pointer to it is EINVAL)."""
    try:
        _ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
    except OSError:
        return False
    return True


def pidfd_open(pid: int, flags: int = 0) -> int:
    return _syscall(SYS_pidfd_open, ctypes.c_int(pid), ctypes.c_uint(flags))


def pidfd_getfd(pidfd: int, target_fd: int) -> int:
    """A duplicate of another process's fd: the same open file description, so a connect on it
    is the child's connect."""
    return _syscall(SYS_pidfd_getfd, ctypes.c_int(pidfd), ctypes.c_int(target_fd), ctypes.c_uint(0))


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@cache
def _vm_function(name: str) -> Any:
    function = getattr(libc(), name)
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    function.restype = ctypes.c_ssize_t
    return function


def read_memory(pid: int, address: int, length: int) -> bytes:
    """`length` bytes of `pid`'s memory at `address`, or fewer where a page is unmapped
    (process_vm_readv stops at the first page it cannot read)."""
    if length <= 0:
        return b""
    buffer = ctypes.create_string_buffer(length)
    vectors = (Iovec * 2)(Iovec(ctypes.addressof(buffer), length), Iovec(address, length))
    base = ctypes.addressof(vectors)
    count = int(_vm_function("process_vm_readv")(pid, base, 1, base + 16, 1, 0))
    return b"" if count <= 0 else buffer.raw[:count]


class StringReader:
    """Reads NUL-terminated strings out of another process into one buffer allocated once: the
    filesystem observation reads a path per notification, and allocation was most of it."""

    def __init__(self) -> None:
        self._buffer = ctypes.create_string_buffer(PAGE + 1)
        self._vectors = (Iovec * 2)()
        self._vectors[0].base = ctypes.addressof(self._buffer)
        self._base = ctypes.addressof(self._vectors)
        self._read = _vm_function("process_vm_readv")

    def read(self, pid: int, address: int, limit: int = 4096) -> bytes | None:
        """The string at `address`, read a page at a time (a read that crosses into an
        unmapped page fails whole); None when it cannot be read or has no NUL within `limit`."""
        if address == 0:
            return None
        data = b""
        while len(data) < limit:
            # Never across a page boundary (a read into an unmapped page fails whole), and
            # short first: most paths are.
            length = min(PAGE - (address + len(data)) % PAGE, limit - len(data), 512 << len(data))
            self._vectors[0].len = length
            self._vectors[1].base = address + len(data)
            self._vectors[1].len = length
            count = int(self._read(pid, self._base, 1, self._base + 16, 1, 0))
            if count <= 0:
                return None
            chunk = ctypes.string_at(self._buffer, count)
            end = chunk.find(b"\0")
            if end >= 0:
                return data + chunk[:end]
            data += chunk
        return None


class Responder:
    """Answers CONTINUE from one thread (the filesystem observation's hot path)."""

    def __init__(self, listener: int) -> None:
        self._listener = listener
        self._ioctl, self._pack = fcntl.ioctl, _RESPONSE.pack

    def proceed(self, notif_id: int) -> bool:
        """CONTINUE; False when the task has gone (so the call never ran)."""
        try:
            self._ioctl(
                self._listener,
                SECCOMP_IOCTL_NOTIF_SEND,
                self._pack(notif_id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE),
            )
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise
        return True


def write_memory(pid: int, address: int, data: bytes) -> bool:
    buffer = ctypes.create_string_buffer(data, len(data))
    vectors = (Iovec * 2)(Iovec(ctypes.addressof(buffer), len(data)), Iovec(address, len(data)))
    base = ctypes.addressof(vectors)
    return int(_vm_function("process_vm_writev")(pid, base, 1, base + 16, 1, 0)) == len(data)


@cache
def _libc_holding_gil() -> ctypes.PyDLL:
    """The same symbols, called WITHOUT releasing the GIL: for a call that cannot block (a
    connect to loopback or on a non-blocking socket). Released, the GIL is often taken by the
    thread the call itself wakes (the engine's proxy accepting that very connection), and the
    supervisor then waits its turn before it can answer."""
    return ctypes.PyDLL(None, use_errno=True)


def sock_connect_now(fd: int, address: bytes) -> int:
    """sock_connect for a connect that returns at once (see _libc_holding_gil)."""
    function = _libc_holding_gil().connect
    function.restype = ctypes.c_int
    result = int(function(ctypes.c_int(fd), address, ctypes.c_uint32(len(address))))
    return -ctypes.get_errno() if result == -1 else result


def _socket_call(name: str, *args: Any) -> int:
    """A libc socket call on raw buffers → its result, or -errno (never raises)."""
    function = getattr(libc(), name)
    # int for all but sendmsg: a c_ssize_t restype would read -1 in eax as 4294967295.
    function.restype = ctypes.c_ssize_t if name == "sendmsg" else ctypes.c_int
    result = int(function(*args))
    return -ctypes.get_errno() if result == -1 else result


def sock_connect(fd: int, address: bytes) -> int:
    """connect(fd, address) with exactly the bytes the child passed → 0 or -errno."""
    return _socket_call("connect", ctypes.c_int(fd), address, ctypes.c_uint32(len(address)))


def sock_bind(fd: int, address: bytes) -> int:
    return _socket_call("bind", ctypes.c_int(fd), address, ctypes.c_uint32(len(address)))


def sock_listen(fd: int, backlog: int) -> int:
    return _socket_call("listen", ctypes.c_int(fd), ctypes.c_int(backlog))


def sock_name(fd: int) -> bytes | None:
    """getsockname(fd) as raw sockaddr bytes; None on failure."""
    buffer = ctypes.create_string_buffer(128)
    length = ctypes.c_uint32(128)
    result = _socket_call("getsockname", ctypes.c_int(fd), buffer, ctypes.byref(length))
    return None if result < 0 else buffer.raw[: length.value]


def sock_sendmsg(fd: int, name: bytes | None, data: bytes, control: bytes, flags: int) -> int:
    """sendmsg(fd) of one gathered buffer → bytes sent or -errno."""
    payload = ctypes.create_string_buffer(data, len(data))
    iov = Iovec(ctypes.cast(payload, ctypes.c_void_p), len(data))
    name_buffer = ctypes.create_string_buffer(name, len(name)) if name else None
    control_buffer = ctypes.create_string_buffer(control, len(control)) if control else None
    message = Msghdr(
        ctypes.cast(name_buffer, ctypes.c_void_p) if name_buffer else None,
        len(name) if name else 0,
        ctypes.pointer(iov),
        1,
        ctypes.cast(control_buffer, ctypes.c_void_p) if control_buffer else None,
        len(control),
        0,
    )
    return _socket_call("sendmsg", ctypes.c_int(fd), ctypes.byref(message), ctypes.c_int(flags))


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers; 0 when it has none (or it is disabled)."""
    try:
        return _syscall(
            SYS_landlock_create_ruleset,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
        )
    except OSError:
        return 0


def enter_landlock_domain(abi: int) -> bool:
    """Put this process (and all it starts) in a Landlock domain of its own.

    The domain is what keeps the agent's hands off flowproof: a task in a domain cannot ptrace,
    pidfd_getfd or read /proc/<pid>/mem of any process outside it (every ABI), nor signal one or
    reach its abstract unix sockets (ABI 6 scopes), whatever its uid. Needs no_new_privs first.
    """
    if abi <= 0:
        return False
    if abi >= 6:
        scopes = LANDLOCK_SCOPE_SIGNAL | LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
        attr = LandlockRulesetAttr(0, 0, scopes)
        size = ctypes.sizeof(LandlockRulesetAttr)
    else:
        attr = LandlockRulesetAttr(LANDLOCK_ACCESS_FS_MAKE_BLOCK, 0, 0)
        size = 8
    try:
        ruleset = _syscall(
            SYS_landlock_create_ruleset,
            ctypes.byref(attr),
            ctypes.c_size_t(size),
            ctypes.c_uint32(0),
        )
    except OSError:
        return False
    try:
        _syscall(SYS_landlock_restrict_self, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    except OSError:
        return False
    finally:
        os.close(ruleset)
    return True

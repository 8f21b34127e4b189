"""The seccomp filter, as classic BPF built by hand, and a cBPF interpreter that tests run it on.

Pure: no ctypes, no system calls. `build_filter()` returns the program as bytes for
seccomp(2); `run_filter()` evaluates it on one `seccomp_data`, exactly as the kernel would, so
every verdict of the filter is a unit test (and pyseccomp, in the tests, cross-checks them).

The filter's default is ALLOW: containment is about the network, and nothing else is denied.

    arch != x86_64 ─────────────────────────────► NOTIFY  (the supervisor reports, ENOSYS)
    nr has the x32 bit (0x40000000) ────────────► NOTIFY  (reported, ENOSYS)
    socket(family, type): unix, netlink ────────► ALLOW
                          inet/inet6 stream, dgram, seqpacket ► ALLOW; raw, packet ► NOTIFY
                          any other family ─────► NOTIFY  (reported, EAFNOSUPPORT)
    socketpair: unix ► ALLOW, else ERRNO(EAFNOSUPPORT)
    connect, bind, listen, sendmsg, sendmmsg ───► NOTIFY  (decided and PERFORMED by the supervisor)
    sendto with a non-NULL address ─────────────► NOTIFY; send() is sendto(NULL) and stays free
    io_uring_setup/enter/register ──────────────► ERRNO(ENOSYS)  (io_uring bypasses seccomp)
    with filesystem observation:
      unlink unlinkat rmdir rename renameat renameat2 truncate ftruncate creat openat2 ► NOTIFY
      open / openat whose flags carry O_TRUNC (JSET, in the kernel) ► NOTIFY
    everything else ────────────────────────────► ALLOW

Why each check is there (each was a bypass or a breakage in the feasibility study):
- the arch check: `int 0x80` enters the i386 table, where connect is 362, not 42;
- the x32 check: x32 calls are x86_64 numbers with bit 30 set;
- 32-bit arguments (families, types, flags) are compared on their LOW word only: the kernel
  truncates an `int` argument, so `socket(0x1_0000_0011)` is AF_PACKET to it, and a filter
  comparing all 64 bits would wave it through;
- a family ALLOWLIST, not a denylist: AF_VSOCK reaches the hypervisor, and new families come.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
X32_SYSCALL_BIT = 0x40000000

RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_USER_NOTIF = 0x7FC00000
RET_ALLOW = 0x7FFF0000

ENOSYS = 38
EAFNOSUPPORT = 97

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET = 1, 2, 5
SOCK_TYPE_MASK = 0xF
O_TRUNC = 0o1000

# x86_64 numbers (arch/x86/entry/syscalls/syscall_64.tbl)
NR = {
    "open": 2,
    "socket": 41,
    "connect": 42,
    "sendto": 44,
    "sendmsg": 46,
    "bind": 49,
    "listen": 50,
    "socketpair": 53,
    "truncate": 76,
    "ftruncate": 77,
    "rename": 82,
    "rmdir": 84,
    "creat": 85,
    "unlink": 87,
    "openat": 257,
    "unlinkat": 263,
    "renameat": 264,
    "sendmmsg": 307,
    "renameat2": 316,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "openat2": 437,
}
NAMES = {number: name for name, number in NR.items()}
NETWORK_TRAPS = ("connect", "bind", "listen", "sendmsg", "sendmmsg")
FS_TRAPS = (
    "unlink",
    "unlinkat",
    "rmdir",
    "rename",
    "renameat",
    "renameat2",
    "truncate",
    "ftruncate",
    "creat",
    "openat2",
)
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")

# seccomp_data offsets: nr, arch, instruction_pointer, then args[6] as u64 (little endian).
_NR, _ARCH = 0, 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index


def _arg_high(index: int) -> int:
    return 16 + 8 * index + 4


# cBPF opcodes (linux/filter.h)
LD_W_ABS = 0x20
ALU_AND_K = 0x54
JA = 0x05
JEQ_K = 0x15
JGT_K = 0x25
JGE_K = 0x35
JSET_K = 0x45
RET_K = 0x06


@dataclass(frozen=True, slots=True)
class Insn:
    code: int
    jt: int
    jf: int
    k: int


class _Assembler:
    """Forward jumps to named labels, resolved once the program is complete."""

    def __init__(self) -> None:
        self._code: list[tuple[int, str | None, str | None, int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def load(self, offset: int) -> None:
        self._code.append((LD_W_ABS, None, None, offset))

    def and_(self, mask: int) -> None:
        self._code.append((ALU_AND_K, None, None, mask))

    def jump(self, code: int, k: int, true: str | None, false: str | None = None) -> None:
        """Jump to `true` when the test holds, else to `false` (None: the next instruction)."""
        self._code.append((code, true, false, k))

    def ret(self, value: int) -> None:
        self._code.append((RET_K, None, None, value))

    def assemble(self) -> list[Insn]:
        program = []
        for index, (code, true, false, k) in enumerate(self._code):
            program.append(Insn(code, self._offset(index, true), self._offset(index, false), k))
        return program

    def _offset(self, index: int, label: str | None) -> int:
        if label is None:
            return 0
        offset = self._labels[label] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"jump to {label} out of cBPF range ({offset})")
        return offset


def build_filter(observe_fs: bool) -> list[Insn]:
    """The program for x86_64; `observe_fs` adds the destructive filesystem traps."""
    a = _Assembler()
    a.load(_ARCH)
    a.jump(JEQ_K, AUDIT_ARCH_X86_64, None, "notify")
    a.load(_NR)
    a.jump(JGE_K, X32_SYSCALL_BIT, "notify")
    a.jump(JEQ_K, NR["socket"], "socket")
    a.jump(JEQ_K, NR["socketpair"], "socketpair")
    a.jump(JEQ_K, NR["sendto"], "sendto")
    for name in NETWORK_TRAPS:
        a.jump(JEQ_K, NR[name], "notify")
    for name in IO_URING:
        a.jump(JEQ_K, NR[name], "enosys")
    if observe_fs:
        for name in FS_TRAPS:
            a.jump(JEQ_K, NR[name], "notify")
        a.jump(JEQ_K, NR["open"], "open")
        a.jump(JEQ_K, NR["openat"], "openat")
    a.ret(RET_ALLOW)

    a.label("socket")
    a.load(_arg_low(0))
    a.jump(JEQ_K, AF_UNIX, "allow")
    a.jump(JEQ_K, AF_NETLINK, "allow")
    a.jump(JEQ_K, AF_INET, "inet")
    a.jump(JEQ_K, AF_INET6, "inet")
    a.ret(RET_USER_NOTIF)
    a.label("inet")  # SOCK_RAW, and SOCK_PACKET (which the kernel turns into AF_PACKET)
    a.load(_arg_low(1))
    a.and_(SOCK_TYPE_MASK)
    a.jump(JEQ_K, SOCK_STREAM, "allow")
    a.jump(JEQ_K, SOCK_DGRAM, "allow")
    a.jump(JEQ_K, SOCK_SEQPACKET, "allow")
    a.ret(RET_USER_NOTIF)

    a.label("socketpair")
    a.load(_arg_low(0))
    a.jump(JEQ_K, AF_UNIX, "allow")
    a.ret(RET_ERRNO | EAFNOSUPPORT)

    a.label("sendto")  # dest_addr is args[4], a pointer: both words must be zero to pass
    a.load(_arg_low(4))
    a.jump(JEQ_K, 0, None, "notify")
    a.load(_arg_high(4))
    a.jump(JEQ_K, 0, "allow", "notify")

    if observe_fs:
        a.label("open")
        a.load(_arg_low(1))
        a.jump(JSET_K, O_TRUNC, "notify", "allow")
        a.label("openat")
        a.load(_arg_low(2))
        a.jump(JSET_K, O_TRUNC, "notify", "allow")

    a.label("notify")
    a.ret(RET_USER_NOTIF)
    a.label("allow")
    a.ret(RET_ALLOW)
    a.label("enosys")
    a.ret(RET_ERRNO | ENOSYS)
    return a.assemble()


def decode(data: bytes) -> list[Insn]:
    """`struct sock_filter` bytes → instructions (the tests read libseccomp's export)."""
    return [Insn(*fields) for fields in struct.iter_unpack("<HBBI", data)]


def encode(program: Sequence[Insn]) -> bytes:
    """The program as an array of `struct sock_filter` for seccomp(2)."""
    return b"".join(struct.pack("<HBBI", i.code, i.jt, i.jf, i.k) for i in program)


def seccomp_data(nr: int, args: Sequence[int] = (), arch: int = AUDIT_ARCH_X86_64) -> bytes:
    """A `struct seccomp_data` as the kernel lays it out, for run_filter."""
    padded = [*args, *([0] * (6 - len(args)))]
    return struct.pack("<iIQ6Q", nr, arch, 0, *padded)


def run_filter(program: Sequence[Insn], data: bytes) -> int:
    """Evaluate `program` on `data` the way the kernel's cBPF does; returns the action."""
    accumulator = 0
    pc = 0
    while True:
        insn = program[pc]
        if insn.code == LD_W_ABS:
            (accumulator,) = struct.unpack_from("<I", data, insn.k)
        elif insn.code == ALU_AND_K:
            accumulator &= insn.k
        elif insn.code == RET_K:
            return insn.k
        elif insn.code == JA:  # libseccomp's programs use it; build_filter does not
            pc += insn.k
        elif insn.code in (JEQ_K, JGT_K, JGE_K, JSET_K):
            holds = {
                JEQ_K: accumulator == insn.k,
                JGT_K: accumulator > insn.k,
                JGE_K: accumulator >= insn.k,
                JSET_K: bool(accumulator & insn.k),
            }[insn.code]
            pc += insn.jt if holds else insn.jf
        else:
            raise ValueError(f"unknown cBPF instruction {insn.code:#x} at {pc}")
        pc += 1

"""The hand-built seccomp filter, run on the cBPF interpreter, and cross-checked with libseccomp."""

from __future__ import annotations

import tempfile

import pytest

from flowproof.containment.bpf import (
    AUDIT_ARCH_I386,
    NR,
    RET_ALLOW,
    RET_ERRNO,
    RET_USER_NOTIF,
    build_filter,
    decode,
    encode,
    run_filter,
    seccomp_data,
)

ALLOW, NOTIFY = RET_ALLOW, RET_USER_NOTIF
ENOSYS, EAFNOSUPPORT = RET_ERRNO | 38, RET_ERRNO | 97
HIGH = 1 << 32
"""An upper word the kernel truncates away from an `int` argument."""
O_WRONLY, O_CREAT, O_TRUNC, O_APPEND = 0o1, 0o100, 0o1000, 0o2000
AT_FDCWD = (1 << 64) - 100
PROGRAM = build_filter(observe_fs=True)


def verdict(name: str, *args: int, arch: int | None = None, program=PROGRAM) -> int:
    data = seccomp_data(NR[name], args) if arch is None else seccomp_data(NR[name], args, arch)
    return run_filter(program, data)


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("connect", (3, 0x1000, 16), NOTIFY),
        ("bind", (3, 0x1000, 16), NOTIFY),
        ("listen", (3, 128), NOTIFY),
        ("sendmsg", (3, 0x1000, 0), NOTIFY),
        ("sendmmsg", (3, 0x1000, 2, 0), NOTIFY),
        ("sendto", (3, 0x1000, 5, 0, 0, 0), ALLOW),  # send(): no address, never trapped
        ("sendto", (3, 0x1000, 5, 0, 0x2000, 16), NOTIFY),
        ("sendto", (3, 0x1000, 5, 0, HIGH, 16), NOTIFY),  # an address above 4 GiB
        ("socket", (2, 1, 0), ALLOW),  # AF_INET SOCK_STREAM
        ("socket", (10, 2 | 0o2000000, 0), ALLOW),  # AF_INET6 SOCK_DGRAM|SOCK_CLOEXEC
        ("socket", (1, 1, 0), ALLOW),
        ("socket", (16, 3, 0), ALLOW),  # netlink raw is how netlink is spoken
        ("socket", (2, 3, 1), NOTIFY),  # AF_INET SOCK_RAW
        ("socket", (2, 10, 0), NOTIFY),  # AF_INET SOCK_PACKET: an AF_PACKET socket
        ("socket", (17, 3, 0), NOTIFY),  # AF_PACKET
        ("socket", (40, 1, 0), NOTIFY),  # AF_VSOCK: the hypervisor
        ("socket", (HIGH | 17, 3, 0), NOTIFY),  # upper-word garbage is still AF_PACKET
        ("socket", (HIGH | 2, 1, 0), ALLOW),  # ... and still AF_INET
        ("socketpair", (1, 1, 0, 0x1000), ALLOW),
        ("socketpair", (40, 1, 0, 0x1000), EAFNOSUPPORT),
        ("io_uring_setup", (8, 0x1000), ENOSYS),
        ("io_uring_enter", (3, 1, 0, 0), ENOSYS),
        ("io_uring_register", (3, 0, 0, 0), ENOSYS),
        ("open", (0x1000, 0), ALLOW),
        ("open", (0x1000, O_WRONLY | O_APPEND), ALLOW),
        ("open", (0x1000, O_WRONLY | O_CREAT | O_TRUNC), NOTIFY),
        ("open", (0x1000, O_TRUNC), NOTIFY),  # O_RDONLY|O_TRUNC truncates on Linux too
        ("openat", (AT_FDCWD, 0x1000, 0), ALLOW),
        ("openat", (AT_FDCWD, 0x1000, HIGH | O_WRONLY | O_CREAT | O_TRUNC), NOTIFY),
        ("openat2", (AT_FDCWD, 0x1000, 0x2000, 24), NOTIFY),  # flags in memory: always trapped
        ("unlink", (0x1000,), NOTIFY),
        ("unlinkat", (AT_FDCWD, 0x1000, 0x200), NOTIFY),
        ("rmdir", (0x1000,), NOTIFY),
        ("rename", (0x1000, 0x2000), NOTIFY),
        ("renameat2", (AT_FDCWD, 0x1000, AT_FDCWD, 0x2000, 0), NOTIFY),
        ("truncate", (0x1000, 0), NOTIFY),
        ("ftruncate", (3, 0), NOTIFY),
        ("creat", (0x1000, 0o644), NOTIFY),
    ],
)
def test_each_call_gets_the_designed_verdict(
    name: str, args: tuple[int, ...], expected: int
) -> None:
    assert verdict(name, *args) == expected


def test_a_call_from_the_i386_abi_goes_to_the_supervisor_whatever_its_number() -> None:
    # int 0x80 connect is i386 call 362; 42 on i386 is pipe. Neither may reach the x86_64 rules.
    assert run_filter(PROGRAM, seccomp_data(362, (3, 0x1000, 16), AUDIT_ARCH_I386)) == NOTIFY
    assert run_filter(PROGRAM, seccomp_data(42, (3,), AUDIT_ARCH_I386)) == NOTIFY


def test_an_x32_call_goes_to_the_supervisor() -> None:
    assert run_filter(PROGRAM, seccomp_data(0x40000000 | NR["connect"], (3, 0x1000, 16))) == NOTIFY
    assert run_filter(PROGRAM, seccomp_data(0x40000000 | 39, ())) == NOTIFY  # getpid


def test_everything_else_is_allowed() -> None:
    for number in (0, 1, 3, 39, 59, 60, 231):  # read write close getpid execve exit exit_group
        assert run_filter(PROGRAM, seccomp_data(number, (1, 2, 3))) == ALLOW


def test_without_filesystem_observation_no_filesystem_call_is_trapped() -> None:
    network_only = build_filter(observe_fs=False)
    for name in ("unlink", "rename", "ftruncate", "openat2"):
        assert verdict(name, 0x1000, program=network_only) == ALLOW
    assert verdict("open", 0x1000, O_TRUNC, program=network_only) == ALLOW
    assert verdict("connect", 3, 0x1000, 16, program=network_only) == NOTIFY


def test_the_program_round_trips_through_its_encoding() -> None:
    assert decode(encode(PROGRAM)) == PROGRAM
    assert len(encode(PROGRAM)) == 8 * len(PROGRAM)


# libseccomp as an oracle: the same policy compiled by it, on the same inputs.

seccomp = pytest.importorskip("pyseccomp", reason="pyseccomp (the test oracle) is not installed")


def _libseccomp_program() -> list:
    f = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in ("connect", "bind", "listen", "sendmsg", "sendmmsg"):
        f.add_rule(seccomp.NOTIFY, name)
    f.add_rule(seccomp.NOTIFY, "sendto", seccomp.Arg(4, seccomp.NE, 0))
    for family in (17, 40, 3, 38):  # AF_PACKET, AF_VSOCK, AF_AX25, AF_ALG
        f.add_rule(seccomp.NOTIFY, "socket", seccomp.Arg(0, seccomp.MASKED_EQ, 0xFFFFFFFF, family))
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        f.add_rule(seccomp.ERRNO(38), name)
    for name in ("unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2"):
        f.add_rule(seccomp.NOTIFY, name)
    for name in ("truncate", "ftruncate", "creat", "openat2"):
        f.add_rule(seccomp.NOTIFY, name)
    f.add_rule(seccomp.NOTIFY, "open", seccomp.Arg(1, seccomp.MASKED_EQ, O_TRUNC, O_TRUNC))
    f.add_rule(seccomp.NOTIFY, "openat", seccomp.Arg(2, seccomp.MASKED_EQ, O_TRUNC, O_TRUNC))
    with tempfile.TemporaryFile() as exported:
        f.export_bpf(exported)
        exported.seek(0)
        return decode(exported.read())


CROSS_CHECKED = [
    ("connect", (3, 0x1000, 16)),
    ("bind", (3, 0x1000, 16)),
    ("listen", (3, 5)),
    ("sendmsg", (3, 0x1000, 0)),
    ("sendmmsg", (3, 0x1000, 4, 0)),
    ("sendto", (3, 0x1000, 5, 0, 0, 0)),
    ("sendto", (3, 0x1000, 5, 0, 0x2000, 16)),
    ("sendto", (3, 0x1000, 5, 0, HIGH, 16)),
    ("socket", (17, 3, 0)),
    ("socket", (HIGH | 17, 3, 0)),
    ("socket", (40, 1, 0)),
    ("socket", (HIGH | 40, 1, 0)),
    ("socket", (2, 1, 0)),
    ("socket", (10, 2, 0)),
    ("socket", (1, 1, 0)),
    ("io_uring_setup", (8, 0)),
    ("io_uring_enter", (3, 1, 0, 0)),
    ("unlink", (0x1000,)),
    ("unlinkat", (AT_FDCWD, 0x1000, 0)),
    ("renameat2", (AT_FDCWD, 0x1000, AT_FDCWD, 0x2000, 1)),
    ("ftruncate", (3, 0)),
    ("openat2", (AT_FDCWD, 0x1000, 0x2000, 24)),
    ("open", (0x1000, 0)),
    ("open", (0x1000, O_WRONLY | O_APPEND)),
    ("open", (0x1000, HIGH | O_WRONLY | O_CREAT | O_TRUNC)),
    ("openat", (AT_FDCWD, 0x1000, O_TRUNC)),
    ("openat", (AT_FDCWD, 0x1000, HIGH)),
    ("read", (3, 0x1000, 10)),
    ("getpid", ()),
]
NR_EXTRA = {"read": 0, "getpid": 39}


@pytest.mark.parametrize(("name", "args"), CROSS_CHECKED, ids=lambda v: str(v))
def test_libseccomp_compiles_the_same_verdicts(name: str, args: tuple[int, ...]) -> None:
    data = seccomp_data(NR.get(name, NR_EXTRA.get(name, -1)), args)
    assert run_filter(PROGRAM, data) == run_filter(ORACLE, data)


ORACLE = _libseccomp_program()

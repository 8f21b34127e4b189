"""Loopback-only network namespaces for the tests that must prove nothing leaves the machine:
one held open by a sleeping process (a module fixture yields its pid), and a way for a thread
of the test to join it before it binds (a network namespace is per thread)."""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterator

import pytest

CLONE_NEWNET = 0x40000000


@pytest.fixture(scope="module", name="netns")
def loopback_only_netns() -> Iterator[int]:
    """A network namespace with only loopback up, held open by a sleeping process; yields
    the holder's pid (`nsenter --net=/proc/<pid>/ns/net` joins it)."""
    holder = subprocess.Popen(
        ["unshare", "-n", "sh", "-c", "ip link set lo up && echo up && exec sleep 3600"],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"up\n"
    holder.stdout.close()
    yield holder.pid
    holder.kill()
    holder.wait()


def join_netns(pid: int) -> None:
    """Move the calling thread into the network namespace of `pid`."""
    descriptor = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(descriptor, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns failed")
    finally:
        os.close(descriptor)

"""Can this host contain an agent? Asked once per engine process, answered with a tier.

The answer comes from trying: the trampoline is started in `--probe` mode and installs the very
filter a flow would run under, so a kernel without the features, a seccomp that refuses user
notification, or flowproof running under another notifier (a container runtime's, a sandbox's,
flowproof's own: a second listener in one filter stack is EBUSY) all show up as what they are.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from functools import cache

from flowproof.containment.findings import CONTAINED, not_contained
from flowproof.containment.seccomp import PROBE, TRAMPOLINE
from flowproof.host.engine_argv import engine_argv
from flowproof.host.environ import host_environ, own_environ

PROBE_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Capability:
    contained: bool
    tier: str
    """`contained (linux seccomp)` or `not contained (<reason>)`."""
    notes: tuple[str, ...] = ()
    """What doctor says besides the tier: weaker semantics, missing hardening."""


NOT_LINUX = "egress containment is Linux-only; this platform is not contained"


@cache
def capability() -> Capability:
    if sys.platform != "linux":
        return Capability(False, not_contained(NOT_LINUX))
    machine = platform.machine()
    if machine != "x86_64":
        return Capability(
            False, not_contained(f"egress containment supports x86_64 only; this is {machine}")
        )
    if not _has_pidfd_getfd():
        return Capability(
            False, not_contained("this kernel has no pidfd_getfd (Linux 5.6 or later is needed)")
        )
    try:
        done = subprocess.run(
            [*engine_argv(), TRAMPOLINE, PROBE, "1"],
            # The probe runs once per process (cached) and is shared by every flow and by
            # doctor, so it asks about flowproof's own environment, not one flow's snapshot.
            env=host_environ(own_environ()),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Capability(False, not_contained(f"the containment probe did not run: {exc}"))
    try:
        report = json.loads(done.stdout.decode().splitlines()[-1])
    except (ValueError, IndexError):
        return Capability(False, not_contained("the containment probe failed"))
    if "error" in report:
        return Capability(False, not_contained(_why(int(report.get("errno") or 0), report)))
    notes = []
    if not report["killable"]:
        notes.append(
            "the kernel lacks SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19): a signal "
            "during a trapped connect can make the agent see a connect that never happened"
        )
    if not report["landlock"]:
        notes.append(
            "no Landlock on this kernel: the agent's processes are kept off flowproof's "
            "listener by dumpable=0 alone (root agents are not)"
        )
    if not _compiled_fs_loop():
        notes.append(
            "the compiled filesystem loop (containment/_fsloop.c) was not built with this "
            "install: filesystem observation runs in Python, and an agent that deletes many "
            "files runs ~1.5x slower contained than with it (docs/performance.md)"
        )
    return Capability(True, CONTAINED, tuple(notes))


def _compiled_fs_loop() -> bool:
    from flowproof.containment.fsobserve import COMPILED_LOOP

    return COMPILED_LOOP is not None


def _why(code: int, report: dict[str, object]) -> str:
    if code == errno.EBUSY:
        return (
            "flowproof already runs under another seccomp notifier (a container runtime's, a "
            "sandbox's or flowproof's own), and the kernel allows one per filter stack"
        )
    if code == errno.EINVAL:
        return "this kernel's seccomp has no user notification (Linux 5.0 or later is needed)"
    if code in (errno.EPERM, errno.EACCES):
        return "the seccomp filter was refused here (a sandbox forbids installing one)"
    return f"the seccomp filter could not be installed: {report.get('error')}"


def _has_pidfd_getfd() -> bool:
    from flowproof.containment import _linux

    try:
        pidfd = _linux.pidfd_open(os.getpid())
    except OSError:
        return False
    try:
        os.close(_linux.pidfd_getfd(pidfd, 0))
    except OSError as exc:
        return exc.errno != errno.ENOSYS
    finally:
        os.close(pidfd)
    return True


def containment_report() -> str:
    """What `doctor` says about egress containment on this host."""
    found = capability()
    lines = [f"Egress containment on this host: {found.tier}."]
    if found.contained:
        lines.append(
            "  A flow with agent.allow_egress or assert_no_egress runs its command: agent under "
            "the seccomp supervisor (docs/containment.md)."
        )
    else:
        lines.append('  assert_no_egress fails here with "cannot certify"; allow_egress is inert.')
    lines += [f"  note: {note}" for note in found.notes]
    return "\n".join(lines)

"""The child side: the trampoline that puts itself under the filter and becomes the agent.

The launcher starts this engine again (`engine_argv()`, frozen or not) with TRAMPOLINE and
three inherited file descriptors: a memfd holding what to run, a pipe to report on and a pipe
to wait on. Being a fresh, single-threaded process, the trampoline can do in Python what a
preexec_fn in the multi-threaded engine could not safely do after fork. In order:

1. PR_SET_DUMPABLE 1: the engine runs with dumpable 0 (so that the agent cannot open its
   /proc files or pidfd_getfd its listener), and the supervisor's own pidfd_getfd of the
   listener needs this process dumpable.
2. no_new_privs (seccomp requires it without CAP_SYS_ADMIN; it also keeps a setuid binary
   from shedding the filter, which is why a setuid child breaks under containment).
3. A Landlock domain where the kernel has one (see _linux.enter_landlock_domain).
4. seccomp(SET_MODE_FILTER, NEW_LISTENER | WAIT_KILLABLE_RECV), WAIT_KILLABLE_RECV dropped on
   a kernel older than 5.19 (and said so).
5. Report `{pid, fd}` on the pipe and wait for the ack. Not sendmsg(SCM_RIGHTS): sendmsg is
   trapped now, and its supervisor does not hold the listener yet. The engine takes the
   listener with pidfd_getfd and acks.
6. Close the listener (an agent holding it could answer its own notifications) and exec the
   agent in its working directory, with the environment the driver gave, SIGPIPE and SIGXFSZ
   back to their defaults.

`--probe` stops after step 4 and reports what it could install: that is how the engine learns
whether this host can contain (doctor, and the first contained flow of a run).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
from typing import Any, NoReturn

TRAMPOLINE = "__flowproof_contain__"
"""The first argument that makes the engine a trampoline instead of the CLI."""
PROBE = "--probe"


def trampoline(arguments: list[str]) -> NoReturn:
    if arguments[:1] == [PROBE]:
        _probe(int(arguments[1]))
    config_fd, report_fd, ack_fd = map(int, arguments[:3])
    with os.fdopen(config_fd, "rb") as config_file:
        config = json.load(config_file)
    try:
        installed = _contain(bool(config["observe_fs"]))
    except OSError as exc:
        _report(report_fd, {"error": exc.strerror or str(exc), "errno": exc.errno})
        os._exit(126)
    _report(report_fd, {"pid": os.getpid(), **installed})
    ack = os.read(ack_fd, 1)
    os.close(int(installed["fd"]))
    os.close(report_fd)
    os.close(ack_fd)
    if ack != b"k":
        os._exit(125)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    argv: list[str] = config["argv"]
    try:
        if config.get("cwd"):
            os.chdir(config["cwd"])
        os.execvpe(argv[0], argv, config["env"])
    except OSError as exc:
        where = f" in {exc.filename}" if exc.filename and exc.filename == config.get("cwd") else ""
        sys.stderr.write(f"flowproof: cannot start the agent {argv[0]}{where}: {exc.strerror}\n")
        os._exit(127)


def _contain(observe_fs: bool) -> dict[str, Any]:
    from flowproof.containment import _linux
    from flowproof.containment.bpf import build_filter, encode
    from flowproof.host.libc import prctl

    program = encode(build_filter(observe_fs))
    prctl(_linux.PR_SET_DUMPABLE, 1)
    prctl(_linux.PR_SET_NO_NEW_PRIVS, 1)
    abi = _linux.landlock_abi()
    landlock = _linux.enter_landlock_domain(abi)
    flags = _linux.SECCOMP_FILTER_FLAG_NEW_LISTENER
    killable = True
    try:
        fd = _linux.install_filter(program, flags | _linux.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        killable = False
        fd = _linux.install_filter(program, flags)
    return {"fd": fd, "killable": killable, "landlock": abi if landlock else 0}


def _probe(report_fd: int) -> NoReturn:
    try:
        installed = _contain(observe_fs=True)
    except OSError as exc:
        _report(report_fd, {"error": exc.strerror or str(exc), "errno": exc.errno})
        os._exit(0)
    _report(report_fd, installed)
    os._exit(0)


def _report(fd: int, message: dict[str, Any]) -> None:
    os.write(fd, json.dumps(message).encode() + b"\n")

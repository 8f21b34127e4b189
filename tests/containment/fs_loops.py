"""One real agent under real containment, observed by the compiled filesystem loop and then by
the Python one (tests/e2e/test_fs_observation_loops.py runs this as root and as nobody).

    python -m tests.containment.fs_loops ROOT PORT   →   one JSON line on stdout

The agent deletes a tree with `rm -rf` (unlinkat, relative to its directory fds), connects to
the loopback listener on PORT in between (a network call, which the compiled loop hands back),
truncates, renames relative to its cwd, ftruncates and opens with openat2 (both handed back),
unlinks and truncates by path. Each loop gets a directory of its own under ROOT.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path

from flowproof.containment import fsobserve
from flowproof.containment.findings import Findings
from flowproof.containment.pins import PinnedPolicy
from flowproof.containment.policy import Policy
from flowproof.containment.session import Supervision
from flowproof.drivers.command import run_command
from flowproof.drivers.launch import SeccompLauncher

AGENT = textwrap.dedent("""\
    import ctypes, os, socket, subprocess, sys
    root, port = sys.argv[1], int(sys.argv[2])
    os.makedirs(f"{root}/tree/sub/deeper")
    for name in ("tree/a.txt", "tree/sub/b.txt", "tree/sub/deeper/c.txt", "kept.txt", "moved"):
        open(f"{root}/{name}", "x").write("x")  # O_EXCL, no O_TRUNC: silent
    subprocess.run(["rm", "-rf", f"{root}/tree"], check=True)
    socket.create_connection(("127.0.0.1", port)).close()
    open(f"{root}/kept.txt", "w").close()                       # openat O_TRUNC
    open(f"{root}/kept.txt", "a").close()                       # an append: silent
    os.chdir(root)
    os.rename("moved", "renamed")
    with open("renamed", "r+") as handle:
        os.ftruncate(handle.fileno(), 0)
    libc = ctypes.CDLL(None, use_errno=True)
    how = (ctypes.c_uint64 * 3)(os.O_WRONLY | os.O_TRUNC, 0, 0)
    fd = libc.syscall(437, -100, b"renamed", how, 24)           # openat2(AT_FDCWD, O_TRUNC)
    os.close(fd)
    os.unlink("renamed")
    os.truncate(f"{root}/kept.txt", 0)
    """)


def observe(root: Path, port: int) -> dict[str, object]:
    findings = Findings()
    launcher = SeccompLauncher(
        Supervision(PinnedPolicy(Policy((), {})), findings, dict(os.environ))
    )
    quoted = "'" + AGENT.replace("'", "'\\''") + "'"
    command = f"{sys.executable} -c {quoted} {root} {port}"
    outcome = asyncio.run(run_command(command, dict(os.environ), 60.0, asyncio.Event(), launcher))
    events = findings.fs_events()
    return {
        "exit": outcome.exit_code,
        "stderr": outcome.stderr_tail,
        "events": [[event.call, event.flags, list(event.paths)] for event in events],
        "times": [event.at for event in events],
        "local": dict(findings.local),
        "faults": findings.faults,
    }


def main(root: Path, port: int) -> None:
    compiled = fsobserve.COMPILED_LOOP
    loops: dict[str, object] = {}
    for loop in ("compiled", "python"):
        (root / loop).mkdir()
        fsobserve.COMPILED_LOOP = compiled if loop == "compiled" else None
        loops[loop] = observe(root / loop, port)
    print(json.dumps({"uid": os.geteuid(), "built": compiled is not None, "loops": loops}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))

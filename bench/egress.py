"""What egress containment costs an agent, contained against plain, side by side in one run.

    python bench/egress.py [--rounds 5] [--json FILE] [--check]

Each figure is measured INSIDE the child (so process start-up is not counted), once plain and
once under the seccomp filter and its supervisor (flowproof's own launcher, as a flow runs
it), interleaved round by round so load on a shared machine falls on both alike:

- an untrapped system call (getppid in a C loop, or ctypes without gcc): the filter's tax on
  everything the agent does that is not network or destructive filesystem (target <= 1 us);
- a trapped, allowed connect: socket + connect + close to a loopback listener, the connect
  performed by the supervisor on its duplicate of the socket;
- `rm -rf` of 5,000 files: every unlinkat reported by filesystem observation (target <= 3x),
  by the compiled receive loop (containment/_fsloop.c) and, for reference, by the Python loop
  an install without it runs (fsobserve.py).

Loopback only: nothing here leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flowproof.containment import fsobserve  # noqa: E402
from flowproof.containment.findings import Findings  # noqa: E402
from flowproof.containment.pins import PinnedPolicy  # noqa: E402
from flowproof.containment.policy import Policy  # noqa: E402
from flowproof.containment.session import Supervision  # noqa: E402
from flowproof.drivers.command import run_command  # noqa: E402
from flowproof.drivers.launch import PLAIN, Launcher, SeccompLauncher  # noqa: E402

FILES = 5000
TARGETS = {"untrapped syscall tax (us)": 1.0, "rm -rf 5000 files (ratio)": 3.0}

GETPPID_C = r"""
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(void) {
    struct timespec a, b;
    long n = 2000000;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) syscall(SYS_getppid);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.4f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n / 1000.0);
    return 0;
}
"""

GETPPID_PY = """
import ctypes, time
libc = ctypes.CDLL(None)
n = 200000
start = time.perf_counter()
for _ in range(n):
    libc.syscall(110)
print((time.perf_counter() - start) / n * 1e6)
"""

CONNECT_PY = """
import socket, sys, time
port, n = int(sys.argv[1]), 500
start = time.perf_counter()
for _ in range(n):
    s = socket.socket()
    s.connect(("127.0.0.1", port))
    s.close()
print((time.perf_counter() - start) / n * 1e6)
"""

RM_PY = """
import os, subprocess, sys, time
root = sys.argv[1]
for d in range(50):
    os.makedirs(f"{root}/d{d}")
    for f in range(100):
        open(f"{root}/d{d}/f{f}", "x").close()
start = time.perf_counter()
subprocess.run(["rm", "-rf", root], check=True)
print((time.perf_counter() - start) * 1000)
"""


def _listener() -> int:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1024)

    def accept() -> None:
        while True:
            connection, _ = server.accept()
            connection.close()

    threading.Thread(target=accept, daemon=True).start()
    return int(server.getsockname()[1])


def _contained() -> Launcher:
    return SeccompLauncher(Supervision(PinnedPolicy(Policy((), {})), Findings(), dict(os.environ)))


async def _measure(argv: list[str], launcher: Launcher) -> float:
    command = subprocess.list2cmdline(argv)
    outcome = await run_command(command, dict(os.environ), 120.0, asyncio.Event(), launcher)
    if outcome.exit_code != 0:
        raise SystemExit(f"{command} failed: {outcome.stderr_tail}")
    return float(outcome.stdout_tail.split()[-1])


COMPILED_LOOP = fsobserve.COMPILED_LOOP
PYTHON_LOOP = "contained, Python loop"


def _run(argv: list[str], kind: str) -> float:
    launcher = PLAIN if kind == "plain" else _contained()
    fsobserve.COMPILED_LOOP = None if kind == PYTHON_LOOP else COMPILED_LOOP
    try:
        return asyncio.run(_measure(argv, launcher))
    finally:
        fsobserve.COMPILED_LOOP = COMPILED_LOOP


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None)
    parser.add_argument("--check", action="store_true")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="flowproof-bench-"))
    gcc = shutil.which("gcc")
    if gcc:
        (work / "getppid.c").write_text(GETPPID_C)
        subprocess.run(
            [gcc, "-O2", "-o", str(work / "getppid"), str(work / "getppid.c")], check=True
        )
        getppid = [str(work / "getppid")]
    else:
        getppid = [sys.executable, "-c", GETPPID_PY]
    port = _listener()
    cases = {
        "getppid (us/call)": lambda: getppid,
        "connect, loopback (us/op)": lambda: [sys.executable, "-c", CONNECT_PY, str(port)],
        "rm -rf 5000 files (ms)": lambda: [
            sys.executable,
            "-c",
            RM_PY,
            str(work / f"tree-{time.monotonic_ns()}"),
        ],
    }
    rm = "rm -rf 5000 files (ms)"
    kinds = {name: ["plain", "contained"] for name in cases}
    if COMPILED_LOOP is not None:
        kinds[rm].append(PYTHON_LOOP)
    else:
        print("note: the compiled filesystem loop is not built here; contained is the Python loop")
    samples = {name: {kind: [] for kind in kinds[name]} for name in cases}
    for _ in range(options.rounds):
        for name, argv in cases.items():
            for kind in kinds[name]:
                samples[name][kind].append(_run(argv(), kind))
    shutil.rmtree(work, ignore_errors=True)
    medians = {
        name: {kind: statistics.median(values) for kind, values in kinds.items()}
        for name, kinds in samples.items()
    }
    getppid_m = medians["getppid (us/call)"]
    connect_m = medians["connect, loopback (us/op)"]
    rm_m = medians[rm]
    results = {
        "untrapped syscall tax (us)": getppid_m["contained"] - getppid_m["plain"],
        "trapped allowed connect tax (us)": connect_m["contained"] - connect_m["plain"],
        "rm -rf 5000 files (ratio)": rm_m["contained"] / rm_m["plain"],
    }
    if PYTHON_LOOP in rm_m:
        results["rm -rf 5000 files, Python loop (ratio)"] = rm_m[PYTHON_LOOP] / rm_m["plain"]
    print(f"egress containment, median of {options.rounds} interleaved rounds")
    print(f"{'measure':<28} {'plain':>10} {'contained':>10} {'Python loop':>12}")
    for name, by_kind in medians.items():
        python = f"{by_kind[PYTHON_LOOP]:>12.3f}" if PYTHON_LOOP in by_kind else ""
        print(f"{name:<28} {by_kind['plain']:>10.3f} {by_kind['contained']:>10.3f} {python}")
    print()
    over = []
    for name, value in results.items():
        target = TARGETS.get(name)
        verdict = (
            ""
            if target is None
            else f" (target <= {target:g}: {'ok' if value <= target else 'OVER'})"
        )
        if target is not None and value > target:
            over.append(name)
        print(f"{name:<34} {value:>8.3f}{verdict}")
    if options.json:
        Path(options.json).write_text(
            json.dumps({"medians": medians, "results": results, "samples": samples}, indent=2)
        )
    return 1 if options.check and over else 0


if __name__ == "__main__":
    sys.exit(main())

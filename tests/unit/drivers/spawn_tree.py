"""A process tree for the stop tests, one level per word.

    python spawn_tree.py PIDFILE LEVEL [LEVEL ...]

Each level does what its word says, appends its pid to PIDFILE (so the file lists the levels in
order, and a test that sees N lines knows all N are set up), starts the remaining levels as its
child, and sleeps, except `exit`:

    plain        nothing special
    setsid       starts a session of its own, leaving the process group (a daemon's first step)
    setpgid      moves to a process group of its own, staying in the session (job control)
    ignore-term  ignores SIGTERM, so only SIGKILL ends it
    exit         starts the rest and exits at once, orphaning them
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

LEVELS = ("plain", "setsid", "setpgid", "ignore-term", "exit")


def main() -> None:
    pidfile, level, *rest = sys.argv[1:]
    assert level in LEVELS, level
    if level == "setsid":
        os.setsid()
    if level == "setpgid":
        os.setpgid(0, 0)
    if level == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(pidfile, "a") as pids:
        pids.write(f"{os.getpid()}\n")
    if rest:
        subprocess.Popen([sys.executable, __file__, pidfile, *rest])
    if level != "exit":
        time.sleep(300)


if __name__ == "__main__":
    main()

"""Stand-ins for remote hosts, inside a network namespace the test created.

`prefix()` is the command prefix that runs flowproof in a fresh network namespace (`unshare
-n`) where only loopback exists, with two documentation-range addresses added to `lo`: a
DECLARED remote (198.51.100.9) and an UNDECLARED one (203.0.113.7), each with a small HTTP
listener on port 8080, and the scripted model upstream on 127.0.0.1 for record. Loopback
cannot play a remote (127/8 is exempt by design), and nothing can leave the empty namespace,
even if the filter had a bug.

Run as `python -m tests.containment.netns READY_FILE`: it serves until its parent exits.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
import time
from pathlib import Path

from tests.conftest import ROOT

DECLARED = "198.51.100.9"
UNDECLARED = "203.0.113.7"
PORT = 8080
UPSTREAM_VARIABLE = "FLOWPROOF_AGENT_UPSTREAM"


def available() -> str:
    """Why a namespace cannot be made here ("" when it can)."""
    if os.geteuid() != 0:
        return "needs root to create a network namespace"
    if not (shutil.which("unshare") and shutil.which("ip")):
        return "needs unshare and ip"
    return ""


DECLARED_NAME, UNDECLARED_NAME = "api.declared.test", "exfil.undeclared.test"


def prefix(ready: Path, script: str = "booking") -> tuple[str, ...]:
    """Prefix for `flowproof(...)`: a namespace with the stand-ins up and
    FLOWPROOF_AGENT_UPSTREAM pointing at the scripted upstream inside it. A mount namespace
    too, whose /etc/hosts names the two stand-ins (DECLARED_NAME, UNDECLARED_NAME)."""
    hosts = ready.with_name(ready.name + ".hosts")
    hosts.write_text(
        f"127.0.0.1 localhost\n{DECLARED} {DECLARED_NAME}\n{UNDECLARED} {UNDECLARED_NAME}\n"
    )
    setup = (
        f"set -e; mount --bind {hosts} /etc/hosts; ip link set lo up; "
        f"ip addr add {DECLARED}/32 dev lo; ip addr add {UNDECLARED}/32 dev lo; "
        f'PYTHONPATH="{ROOT}" "{sys.executable}" -m tests.containment.netns "$READY" "$SCRIPT" & '
        'for i in $(seq 200); do [ -s "$READY" ] && break; sleep 0.05; done; '
        f'export {UPSTREAM_VARIABLE}="$(cat "$READY")"; exec "$@"'
    )
    namespaces = ("unshare", "-n", "-m", "--propagation", "private")
    return ("env", f"READY={ready}", f"SCRIPT={script}", *namespaces, "sh", "-c", setup, "sh")


def _serve_http(address: str) -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, PORT))
    listener.listen(64)

    def serve() -> None:
        while True:
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                body = f"hello from {address}".encode()
                connection.sendall(
                    b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )

    threading.Thread(target=serve, daemon=True).start()


def main(ready: str, script: str) -> None:
    from tests.e2e.booking import BOOKING_SCRIPT
    from tests.upstream.scripted import ScriptedUpstream

    parent = os.getppid()
    for address in (DECLARED, UNDECLARED):
        _serve_http(address)
    upstream = ScriptedUpstream()
    upstream.script = {"booking": BOOKING_SCRIPT}[script]
    upstream.start()
    Path(ready).write_text(upstream.base_url)
    while os.getppid() == parent:  # the parent became flowproof (exec); it has exited
        time.sleep(0.1)
    upstream.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

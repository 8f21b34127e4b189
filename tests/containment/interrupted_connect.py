"""Ctrl-C during a slow trapped connect (feasibility §4.6), run inside a namespace of its own:
`unshare -n python -m tests.containment.interrupted_connect`. Prints the harness's JSON.

A declared "remote" (198.51.100.9, on the namespace's `lo`) whose listener has a full accept
queue (backlog 0, one connection never accepted) drops every further SYN, so a blocking connect
to it hangs for the kernel's SYN retries (about two minutes). The agent sends itself SIGINT, as
a terminal's Ctrl-C does, one second into that connect, and says when KeyboardInterrupt reached
it. The supervisor performs that connect on a worker, and the task waits for its answer with
only fatal signals able to wake it, so without the supervisor's signal watcher the SIGINT would
wait for the connect to end.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys

from tests.containment.harness import contained

ADDRESS, PORT = "198.51.100.9", 8090
AGENT = f"""
import os, signal, socket, threading, time
# Catch Ctrl-C whatever the agent inherited: a process started with SIGINT ignored (as a test
# worker can be) starts Python with no handler for it, and an ignored signal is never pending.
signal.signal(signal.SIGINT, signal.default_int_handler)
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
started = time.monotonic()
try:
    socket.create_connection(("{ADDRESS}", {PORT}))
    print("connected", flush=True)
except KeyboardInterrupt:
    print(f"interrupted after {{time.monotonic() - started:.2f}} s", flush=True)
"""


def main() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "addr", "add", f"{ADDRESS}/32", "dev", "lo"], check=True)
    listener = socket.socket()
    listener.bind((ADDRESS, PORT))
    listener.listen(0)
    queued = socket.create_connection((ADDRESS, PORT))  # fills the accept queue
    result = asyncio.run(
        contained([sys.executable, "-c", AGENT], [f"{ADDRESS}:{PORT}"], timeout=30.0)
    )
    queued.close()
    result["inherited_sigint"] = str(signal.getsignal(signal.SIGINT))  # for a failure's message
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

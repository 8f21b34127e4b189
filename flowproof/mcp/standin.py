"""The stdio stand-in: the process an agent's MCP SDK spawns in place of the real server.

It relays lines and decides nothing: stdin to the engine's control socket, the socket to
stdout. What a call means (forward it at record, answer it from the lane at replay, answer a
mocked tool) is decided in the engine (mcp/server.py), so this process imports only the
standard library and starts in tens of milliseconds.

Everything it needs is in its argv, because the MCP SDKs spawn a server with almost no
environment: the engine's control address, the server's name, and the per-run token that keeps
any other local process from attaching to the flow.

    <engine> mcp-stand-in --connect 127.0.0.1:<port> --server <name> --token <token>

On stdin EOF (the SDKs close stdin, then send SIGTERM two seconds later) it tells the engine,
lets it flush what is still owed to the agent, and exits well within those two seconds.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading

COMMAND = "mcp-stand-in"
"""The engine subcommand that runs this relay (dispatched in flowproof/__main__.py)."""
FLUSH_SECONDS = 1.5
"""How long the engine may take, after stdin closed, to send what it still owes the agent."""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"flowproof {COMMAND}")
    parser.add_argument("--connect", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args(argv)
    host, _, port = args.connect.rpartition(":")
    try:
        control = socket.create_connection((host, int(port)), timeout=10)
    except (OSError, ValueError) as exc:
        print(
            f"flowproof {COMMAND}: cannot reach the flowproof run at {args.connect} ({exc}). "
            "This command is flowproof's stand-in for an MCP server: it only works while "
            "`flowproof run` or `flowproof record` is running the flow that printed it.",
            file=sys.stderr,
        )
        return 1
    control.settimeout(None)
    hello = {"server": args.server, "token": args.token}
    control.sendall(json.dumps(hello).encode() + b"\n")
    to_agent = threading.Thread(target=_relay_to_agent, args=(control,), daemon=True)
    to_agent.start()
    _relay_to_engine(control)
    to_agent.join(FLUSH_SECONDS)
    return 0


def _relay_to_engine(control: socket.socket) -> None:
    stdin = sys.stdin.buffer
    try:
        for line in iter(stdin.readline, b""):
            control.sendall(line if line.endswith(b"\n") else line + b"\n")
    except OSError:
        return  # the engine went away: the flow is over
    try:
        control.shutdown(socket.SHUT_WR)  # EOF to the engine: "the agent closed stdin"
    except OSError:
        pass


def _relay_to_agent(control: socket.socket) -> None:
    stdout = sys.stdout.buffer
    reader = control.makefile("rb")
    try:
        for line in iter(reader.readline, b""):
            stdout.write(line)
            stdout.flush()
    except (OSError, ValueError):
        pass

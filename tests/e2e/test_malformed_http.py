"""A request outside HTTP/1.1's grammar fails the flow, naming why, through the real CLI.

The agent is a few lines of Python writing its own HTTP over a raw socket to the proxy URL
flowproof injects: a request smuggled behind one framed both by Content-Length and chunked, a
chunk size written `0x2`, a 70 KB head. Each is refused by the proxy's HTTP server before any
backend sees it; the agent copes with the refusal and exits 0, and the flow still fails, with
the request, the status and the reason, and nothing smuggled is served.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import flowproof
from tests.e2e.booking import write_spec

RAW_AGENT = r"""
import os, socket, sys
from urllib.parse import urlsplit

base = urlsplit(os.environ["OPENAI_BASE_URL"])
path = base.path.rstrip("/") + "/chat/completions"
head = f"POST {path} HTTP/1.1\r\nHost: {base.netloc}\r\nContent-Type: application/json\r\n"
kind = sys.argv[1]
if kind == "smuggle":
    # The trace's first request, hidden behind a body that Content-Length and chunked frame
    # differently: served, it would be turn 1.
    first = open(sys.argv[2], "rb").read()
    smuggled = (head + f"Content-Length: {len(first)}\r\n\r\n").encode() + first
    body = b"0\r\n\r\n" + smuggled
    raw = (head + f"Content-Length: {len(body)}\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    raw += body
elif kind == "hex-prefix":
    raw = (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + b"0x2\r\n{}\r\n0\r\n\r\n"
else:
    raw = (head + "X-Padding: " + "a" * 70_000 + "\r\nContent-Length: 2\r\n\r\n{}").encode()
answer = b""
with socket.create_connection((base.hostname, base.port)) as connection:
    try:
        connection.sendall(raw)
        while chunk := connection.recv(65536):
            answer += chunk
    except OSError as exc:  # the proxy may close before it has read all of a refused request
        answer = answer or repr(exc).encode()
print("the proxy answered:", answer.split(b"\r\n")[0].decode(), file=sys.stderr)
"""

FLOW = "Booking assistant books a flight  (specs/booking.yaml)"
PATH = "/v1/chat/completions"
MALFORMED = {
    "smuggle": (
        "(400): POST /v1/chat/completions: the request has both Content-Length and "
        "Transfer-Encoding; send one of them"
    ),
    "hex-prefix": "(400): POST /v1/chat/completions: not a chunk-size line (hex digits only): '0x2'",
    "big-head": (
        "(431): POST /v1/chat/completions: the request line and headers are over 65536 bytes"
    ),
}


@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_request_fails_the_flow_naming_why(recorded: Path, kind: str) -> None:
    trace = json.loads((recorded / "specs" / "booking.trace.json").read_text())
    first_request = recorded / "first_request.json"
    first_request.write_text(json.dumps(trace["lanes"]["model"][0]["request"]))
    agent = recorded / "raw_agent.py"
    agent.write_text(RAW_AGENT)
    write_spec(recorded, command=f"{sys.executable} {agent} {kind} {first_request}")

    result = flowproof("run", "specs", cwd=recorded)

    assert result.code == 1, result.output
    assert (
        f"FAIL  {FLOW} · 0 of 3 turns served\n"
        f"      request 1 could not be served {MALFORMED[kind]}\n"
    ) in result.stderr
    assert "Traceback" not in result.output

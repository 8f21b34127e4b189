"""The raw-asyncio side of the comparisons: a canned HTTP/1.1 server and the one client.

The canned server is the lower bound flowproof is measured against: it reads a request (head
and Content-Length body), looks up pre-rendered bytes, and writes them; keep-alive, no
parsing of the JSON. The client drives flowproof's proxy and the canned server alike: it sends
pre-encoded requests on keep-alive connections and reads each answer fully (Content-Length or
chunked).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

Choose = Callable[[bytes, bytes], bytes]
"""(request head, request body) -> the whole response, status line to last byte."""


def http_json(body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def http_chunked(frames: Sequence[bytes]) -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames)
    return head + chunks + b"0\r\n\r\n"


def header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


async def serve_canned(choose: Choose, port: int = 0) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(header(head, b"content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                writer.write(choose(head, body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", port, limit=1 << 26)


def encode_body(body: Any) -> bytes:
    """A request body's bytes as the bench's client sends them."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def encode_request(path: str, body: Any, headers: dict[str, str]) -> bytes:
    raw = encode_body(body)
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"Content-Length: {len(raw)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + raw


async def read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = header(head, b"content-length")
    if length is not None:
        await reader.readexactly(int(length))
    elif (header(head, b"transfer-encoding") or b"").lower() == b"chunked":
        while True:
            size = int((await reader.readline()).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status


async def drive(
    port: int, requests_for: Callable[[int], Sequence[bytes]], clients: int, seconds: float
) -> dict[str, float]:
    """`clients` keep-alive connections, each sending its request list round and round for
    `seconds`; returns completed requests and the rate."""
    deadline = time.perf_counter() + seconds
    done = [0] * clients

    async def one(cid: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 26)
        sequence = requests_for(cid)
        try:
            while time.perf_counter() < deadline:
                for raw in sequence:  # a whole flow's turns, so a replay is never cut short
                    writer.write(raw)
                    status = await read_response(reader)
                    if status != 200:
                        raise RuntimeError(f"status {status} from port {port}")
                    done[cid] += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(one(c) for c in range(clients)))
    elapsed = time.perf_counter() - started
    total = sum(done)
    return {"requests": total, "seconds": elapsed, "per_second": total / elapsed}


async def send_all(port: int, sequence: Sequence[bytes]) -> float:
    """Send `sequence` once, in order, on one keep-alive connection; seconds taken."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 26)
    try:
        for raw in sequence:
            writer.write(raw)
            status = await read_response(reader)
            if status != 200:
                raise RuntimeError(f"status {status} from port {port}")
    finally:
        writer.close()
    return time.perf_counter() - started

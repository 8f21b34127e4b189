"""The agent's stdout and stderr: pipes flowproof owns, drained by a reader that cannot stall.

The pipes are made here and only their write ends are handed to the agent, so the agent's
process object holds no pipe of its own: waiting for it returns when it exits, not when the
last process that inherited its stdout closes it (asyncio's own pipes tie the two together).
The reader takes whatever bytes arrive, in chunks, and keeps only the last TAIL_BYTES: no line
is too long for it, however much an agent writes without a newline, and it never stops
reading, so the agent never blocks on a full pipe.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO

from flowproof.guards import spellings

TAIL_BYTES = 8 * 1024
"""How much of each stream is kept for the failure message: the end, where the error is."""
TAIL_LINES = 20
"""Of which at most this many lines are shown."""
CUT = spellings.CUT
"""Marks a first kept line whose beginning was dropped (the redactor masks a piece of a secret
left beside it: flowproof/guards/spellings.py)."""


class _Tail(asyncio.Protocol):
    """Reads one pipe to its end, keeping the last TAIL_BYTES of it."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.cut = False
        self.ended = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.kept += data
        if len(self.kept) > TAIL_BYTES:
            del self.kept[: len(self.kept) - TAIL_BYTES]
            self.cut = True

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended.set()


class OutputPipe:
    """One output stream of the agent: the write end for the child, the tail for flowproof."""

    def __init__(self, child_end: int, tail: _Tail, transport: asyncio.ReadTransport) -> None:
        self.child_end = child_end
        """The write end the launcher gives the agent; closed here once the agent has it."""
        self._handed_over = False
        self._tail = tail
        self._transport = transport

    def handed_over(self) -> None:
        """The agent holds the write end now: drop ours, or the pipe would never end."""
        if not self._handed_over:
            self._handed_over = True
            os.close(self.child_end)

    async def drained(self, timeout: float) -> bool:
        """Wait up to `timeout` for every writer to have closed the pipe."""
        try:
            await asyncio.wait_for(self._tail.ended.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        """Stop reading. A writer that escaped the tree gets EPIPE, and nothing waits for it."""
        self.handed_over()
        self._transport.close()

    def tail(self) -> str:
        """The last lines written, at most TAIL_LINES and TAIL_BYTES of them."""
        return "\n".join(spellings.last_lines(bytes(self._tail.kept), self._tail.cut, TAIL_LINES))


async def open_pipe() -> OutputPipe:
    read_end, write_end = os.pipe()
    reader: IO[bytes] = os.fdopen(read_end, "rb", buffering=0)
    try:
        transport, tail = await asyncio.get_running_loop().connect_read_pipe(_Tail, reader)
    except BaseException:
        reader.close()
        os.close(write_end)
        raise
    return OutputPipe(write_end, tail, transport)


@asynccontextmanager
async def output_pipes() -> AsyncIterator[tuple[OutputPipe, OutputPipe]]:
    """The agent's stdout and stderr, closed on the way out whatever happened."""
    stdout = await open_pipe()
    try:
        stderr = await open_pipe()
    except BaseException:
        stdout.close()
        raise
    try:
        yield stdout, stderr
    finally:
        stdout.close()
        stderr.close()

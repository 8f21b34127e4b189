"""The canned stub: the lower bound of a flow. The ten recorded answers, pre-rendered, served
by the raw-asyncio server of lib/wire.py from a thread; which answer a request gets is the
number of tool results in its body (one per earlier turn), so the stub never parses JSON."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from bench.lib.fixtures import recorded_turns
from bench.lib.wire import http_json, serve_canned


class CannedStub:
    def __init__(self, trace: Path) -> None:
        self.answers = [
            http_json(json.dumps(t["response"], ensure_ascii=False).encode())
            for t in recorded_turns(trace)
        ]
        self.loop = asyncio.new_event_loop()
        self.port = 0

    def choose(self, head: bytes, body: bytes) -> bytes:
        return self.answers[min(body.count(b'"tool_call_id"'), len(self.answers) - 1)]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self.loop)
            server = self.loop.run_until_complete(serve_canned(self.choose))
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        threading.Thread(target=serve, name="canned-stub", daemon=True).start()
        assert ready.wait(10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)

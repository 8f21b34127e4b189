"""An aiohttp application served on 127.0.0.1 from a thread of its own: the scripted upstream
model and the fake GitHub API run this way beside the real processes a test drives."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Callable

from aiohttp import web


class ThreadedApp:
    def __init__(
        self,
        name: str,
        routes: Callable[[web.Application], None],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.name = name
        self._routes = routes
        self._ssl_context = ssl_context  # serve HTTPS with its certificate when given
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Serve on an ephemeral loopback port; returns it once the server listens."""
        ready = threading.Event()
        bound: list[int] = []

        async def boot() -> web.AppRunner:
            app = web.Application()
            self._routes(app)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self._ssl_context).start()
            bound.append(runner.addresses[0][1])
            ready.set()
            return runner

        def serve() -> None:
            asyncio.set_event_loop(self._loop)
            runner = self._loop.run_until_complete(boot())
            self._loop.run_forever()
            self._loop.run_until_complete(runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=serve, name=self.name, daemon=True)
        self._thread.start()
        assert ready.wait(10), f"the {self.name} server did not start"
        return bound[0]

    def stop(self) -> None:
        """Stop serving; safe to call twice."""
        if self._thread is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

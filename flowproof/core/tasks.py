"""The one way flowproof starts a background task: named, and referenced until it ends.

asyncio keeps only a weak reference to a task, so a fire-and-forget task can be collected
mid-flight; keeping a strong reference here (mitmproxy's asyncio_utils) prevents that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_running: set[asyncio.Task[Any]] = set()


def create_task(coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
    task = asyncio.create_task(coro, name=name)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task

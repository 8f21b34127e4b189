# The compiled filesystem receive loop (_fsloop.c); see fsobserve.py.
from typing import Any

def observe(
    listener: int, shapes: bytes, unresolved: str, sink: list[Any], /
) -> tuple[int, bytes | None]: ...

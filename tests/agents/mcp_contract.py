"""How a test agent finds its MCP server: the environment flowproof injects.

For a server named NAME (upper-cased, every non-alphanumeric as `_`), exactly one of
FLOWPROOF_MCP_SERVER_<NAME> (a POSIX-quoted command line of a stdio server; shlex.split gives
its argv) or FLOWPROOF_MCP_URL_<NAME> (a streamable-HTTP URL) is set. Imported by the agents in
this directory (run as scripts, so this directory is on sys.path).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from typing import NoReturn


@dataclass(frozen=True)
class Target:
    argv: list[str] | None = None
    """The stdio server's argv, or None for HTTP."""
    url: str | None = None
    """The streamable-HTTP URL, or None for stdio."""


def env_name(server: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", server).upper()


def fail(program: str, message: str, code: int = 2) -> NoReturn:
    print(f"{program}: {message}", file=sys.stderr)
    sys.exit(code)


def server_target(program: str, server: str) -> Target:
    name = env_name(server)
    command = os.environ.get(f"FLOWPROOF_MCP_SERVER_{name}")
    url = os.environ.get(f"FLOWPROOF_MCP_URL_{name}")
    if command and url:
        fail(program, f"both FLOWPROOF_MCP_SERVER_{name} and FLOWPROOF_MCP_URL_{name} are set")
    if url:
        return Target(url=url)
    if command:
        argv = shlex.split(command)
        if not argv:
            fail(program, f"FLOWPROOF_MCP_SERVER_{name} is empty")
        return Target(argv=argv)
    fail(
        program,
        f"neither FLOWPROOF_MCP_SERVER_{name} nor FLOWPROOF_MCP_URL_{name} is set "
        f"(the MCP server {server!r} has no command line or URL)",
    )


def describe(error: BaseException) -> str:
    """One line naming the innermost errors (the SDKs wrap them in nested exception groups)."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    return f"{type(error).__name__}: {error}"

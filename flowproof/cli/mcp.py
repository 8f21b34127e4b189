"""`flowproof mcp`: start flowproof's MCP server (flowproof/mcp_server/) on stdio.

The `mcp` SDK is an optional extra: without it this exits 2 saying how to install it, and no
other command ever imports it.
"""

from __future__ import annotations

import os

from flowproof.core.errors import ConfigError

INSTALL_HINT = (
    "flowproof mcp needs the MCP SDK, an optional extra: pip install 'flowproof-cli[mcp]' "
    "(or: uv tool install 'flowproof-cli[mcp]', pipx install 'flowproof-cli[mcp]')"
)


FROZEN_HINT = (
    "the standalone flowproof engine (the installer's, npm's) does not include the MCP server; "
    "install the Python package with its extra instead: pip install 'flowproof-cli[mcp]'"
)
SERVER_MODULE = "flowproof.mcp_server.server"


def serve_command(directory: str | None) -> None:
    try:
        from flowproof.mcp_server.server import serve
    except ModuleNotFoundError as exc:
        name = exc.name or ""
        if name == SERVER_MODULE:  # left out of the frozen engine (installer/pyinstaller)
            raise ConfigError(FROZEN_HINT) from None
        if name.split(".")[0] != "mcp":
            raise
        raise ConfigError(INSTALL_HINT) from None
    if directory is not None:
        os.chdir(directory)
    serve()

"""`flowproof mcp`: start flowproof's MCP server (flowproof/mcp_server/) on stdio.

The `mcp` SDK is an optional extra: without it this exits 2 saying how to install it, and no
other command ever imports it.
"""

from __future__ import annotations

import os

from flowproof.errors import ConfigError

INSTALL_HINT = (
    "flowproof mcp needs the MCP SDK, an optional extra: pip install 'flowproof-cli[mcp]' "
    "(or: uv tool install 'flowproof-cli[mcp]', pipx install 'flowproof-cli[mcp]')"
)


def serve_command(directory: str | None) -> None:
    try:
        from flowproof.mcp_server.server import serve
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != "mcp":
            raise
        raise ConfigError(INSTALL_HINT) from None
    if directory is not None:
        os.chdir(directory)
    serve()

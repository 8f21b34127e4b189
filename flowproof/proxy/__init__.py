"""The loopback model proxy: aiohttp IO around the pure dialect and matching layers."""

DEFAULT_UPSTREAM_TIMEOUT = 600.0
"""Seconds record waits for one whole upstream answer (`record --upstream-timeout`): long, as
record asks for the complete answer and a slow model can take minutes to write it. Here, not in
proxy/forward.py, so that the engine and the CLI name the default without loading record's
forwarding backend on every replay."""

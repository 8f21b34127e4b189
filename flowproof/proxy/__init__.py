"""The loopback model proxy: its own HTTP/1.1 server (h1.py parses, http.py runs one loop per
connection) around one handler (app.py), its backends (replay.py, forward.py, keep.py,
canned.py, meeting it at backend.py) and one renderer (render.py), over the pure dialect and
matching layers."""

DEFAULT_UPSTREAM_TIMEOUT = 600.0
"""Seconds record waits for one whole upstream answer (`record --upstream-timeout`): long, as
record asks for the complete answer and a slow model can take minutes to write it. Here, not in
proxy/forward.py, so that the engine and the CLI name the default without loading record's
forwarding backend on every replay."""

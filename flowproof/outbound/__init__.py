"""How record reaches an upstream: the one place that opens client connections to a model API
or a real MCP server (`session.py`). Replay never imports this package."""

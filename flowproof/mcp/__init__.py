"""The tool boundary: flowproof standing in for an agent's MCP servers.

    agent ──stdio──► stand-in process (mcp/standin.py) ──control socket──┐
    agent ──HTTP POST/GET──► loopback listener (mcp/http.py) ────────────┤
                                                                          ▼
                                   McpBoundary (mcp/boundary.py): one Session per connection
                                     record: forward to the real server (mcp/upstream.py)
                                     replay: answer from the recorded lane (mcp/lane.py)
                                     mocked tools: answered here, in both phases, never forwarded

A lane is transport-blind: what is recorded is JSON-RPC messages, never how they travelled, so a
lane recorded over stdio replays over HTTP and back.
"""

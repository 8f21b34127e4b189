"""`flowproof mcp`: flowproof's own MCP server, which lets a coding agent list, run and record
specs, read traces and run doctor, with structured results (tools.py; server.py registers them
with the `mcp` SDK, installed with the `flowproof-cli[mcp]` extra).

Not to be confused with flowproof/mcp/, the MCP lane of a FLOW: the stand-ins that record and
replay the MCP servers an agent under test uses.
"""

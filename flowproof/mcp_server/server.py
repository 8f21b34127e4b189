"""The `flowproof mcp` server: the tools of tools.py over stdio, with the `mcp` SDK's MCPServer.

Each tool returns a JSON object, which the SDK sends both as structured content and as its
JSON text (for clients that read only text). Paths are relative to the directory the server
runs in (`flowproof mcp --directory DIR`, else where the client started it).
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from flowproof._version import __version__
from flowproof.mcp_server import tools

INSTRUCTIONS = (
    "flowproof tests AI agents by recording their model traffic once and replaying it. "
    "run_specs replays specs (YAML files with `app: agent`) against their committed traces "
    "and answers with the run record `flowproof run --json` prints: per flow its verdict, "
    "which steps failed and where the agent's requests diverged from the recording. "
    "record_spec re-records a spec against the real model (an upstream and key must be set "
    'in this server\'s environment). Failures are returned as data (`verdict: "fail"`, a '
    "non-zero `exit_code`, or an `error` object), never as tool errors."
)


def build_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        "flowproof", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    @server.tool()
    async def list_specs(paths: list[str] | None = None) -> dict[str, Any]:
        """List the flowproof specs under `paths` (files or directories; default: specs/),
        each with its name, its trace's path and whether that trace exists."""
        return await tools.list_specs(paths or ["specs"])

    @server.tool()
    async def run_specs(paths: list[str] | None = None) -> dict[str, Any]:
        """Replay the specs under `paths` (default: specs/) against their traces, as
        `flowproof run` does, and answer with the run record it writes (the document
        `flowproof run --json` prints, docs/schemas/run-record.schema.json) and its path.
        `exit_code`: 0 passed, 1 a flow failed, 2 a spec could not run. Per flow: verdict,
        reasons, each step's verdict, the divergence (index, recorded_index, differences),
        the trajectory and the timeline. Specs that cannot run are listed under `errors`."""
        return await tools.run_specs(paths or ["specs"])

    @server.tool()
    async def record_spec(path: str, keep_matching: bool = False) -> dict[str, Any]:
        """Record one spec against the real model, as `flowproof record` does, writing its
        trace when the flow passes. Needs FLOWPROOF_AGENT_UPSTREAM (or a provider's base URL
        variable) and a key in this server's environment; without them it refuses and says
        what to set. `keep_matching`: serve the requests that still match the old trace from
        it and forward only the rest. `flow`: the flow's run-record entry, with the run
        record's path."""
        return await tools.record_spec(path, keep_matching)

    @server.tool()
    async def show_trajectory(trace: str) -> dict[str, Any]:
        """The trajectory of a trace file (or of a spec's trace, given the spec): the tool
        calls the model asked for, the calls executed at MCP servers, the final reply, and the
        timeline of every recorded turn."""
        return await tools.show_trajectory(trace)

    @server.tool()
    async def diff_traces(old: str, new: str) -> dict[str, Any]:
        """The trajectory changes between two trace files, as `flowproof diff` lists them."""
        return await tools.diff_traces(old, new)

    @server.tool()
    async def doctor(
        command: str,
        prompt: str | None = None,
        timeout: float | None = None,
        mcp: list[str] | None = None,
        mcp_url: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run an agent command once against canned model answers (no model, no key), as
        `flowproof doctor --agent COMMAND` does: which model requests reached flowproof's
        proxy, which named MCP servers (`mcp`: stdio, `mcp_url`: HTTP) were reached, and
        what in the requests would stop a trace from replaying."""
        return await tools.doctor(command, prompt, timeout, mcp or (), mcp_url or (), env)

    return server


def serve() -> None:
    build_server().run("stdio")

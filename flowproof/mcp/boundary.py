"""The tool boundary of one flow: every declared MCP server, its stand-in, and what it owes.

`mcp_boundary` opens the stand-ins a spec's `mcp:` block needs (the stdio control listener,
one HTTP listener per `url:` server), tells the driver what to inject into the agent, and after
the agent has gone says why the boundary failed, if it did: a server the agent never contacted
at record, recorded calls left unserved at replay.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flowproof.mcp.lane import LANE_PREFIX, describe, lane_name
from flowproof.mcp.server import McpServer
from flowproof.mcp.stdio import RealServer, StdioStandIns
from flowproof.mocks import tool_mocks
from flowproof.spec.model import McpServerSpec, mcp_variable_suffix
from flowproof.spec.refs import resolve
from flowproof.trace.model import Trace
from flowproof.traffic import Traffic

if TYPE_CHECKING:
    from flowproof.mcp.http import HttpStandIn

SERVER_VARIABLE = "FLOWPROOF_MCP_SERVER_"
URL_VARIABLE = "FLOWPROOF_MCP_URL_"


@dataclass(slots=True)
class McpBoundary:
    specs: Sequence[McpServerSpec]
    servers: dict[str, McpServer]
    stdio: StdioStandIns | None
    http: dict[str, HttpStandIn]
    undeclared: tuple[str, ...] = ()
    """At replay: MCP lanes of the trace whose server the spec no longer declares."""

    def handles(self) -> dict[str, str]:
        """`${flowproof.mcp_server.<name>}` and `${flowproof.mcp_url.<name>}`."""
        found = {}
        for spec in self.specs:
            if spec.command is not None:
                assert self.stdio is not None
                found[f"mcp_server.{spec.name}"] = self.stdio.command_line(spec.name)
            else:
                found[f"mcp_url.{spec.name}"] = self.http[spec.name].url
        return found

    def environment(self) -> dict[str, str]:
        """FLOWPROOF_MCP_SERVER_<NAME> and FLOWPROOF_MCP_URL_<NAME>, for the agent."""
        env = {}
        for handle, value in self.handles().items():
            kind, name = handle.split(".", 1)
            prefix = SERVER_VARIABLE if kind == "mcp_server" else URL_VARIABLE
            env[prefix + mcp_variable_suffix(name)] = value
        return env

    def never_contacted(self) -> list[str]:
        """At record: each declared server the agent never reached (no trace may be written)."""
        reasons = []
        for spec in self.specs:
            if self.servers[spec.name].contacts:
                continue
            variable = mcp_variable_suffix(spec.name)
            if spec.command is not None:
                reasons.append(
                    f"the agent never spawned flowproof's MCP stand-in for {spec.name}: point "
                    f"the command of its MCP server {spec.name} at ${SERVER_VARIABLE}{variable} "
                    f"(or ${{flowproof.mcp_server.{spec.name}}} in agent.env)"
                )
            else:
                reasons.append(
                    f"the agent never contacted flowproof's MCP listener for {spec.name}: point "
                    f"the URL of its MCP server {spec.name} at ${URL_VARIABLE}{variable} "
                    f"(or ${{flowproof.mcp_url.{spec.name}}} in agent.env)"
                )
        return reasons

    def unserved(self) -> list[str]:
        """At replay: recorded calls the agent never made, per server."""
        reasons = [
            f"the trace has a lane {lane} for an MCP server the spec no longer declares; "
            "declare it under mcp: again, or re-record the flow"
            for lane in self.undeclared
        ]
        for server in self.servers.values():
            left = server.unserved()
            if not left:
                continue
            assert server.matcher is not None
            total = len(server.matcher.calls)
            names = ", ".join(describe(call.request) for call in left[:5])
            more = f" and {len(left) - 5} more" if len(left) > 5 else ""
            reasons.append(
                f"{server.lane}: served {total - len(left)} of {total} recorded calls: the "
                f"agent finished without making {names}{more}"
            )
        return reasons


@asynccontextmanager
async def mcp_boundary(
    specs: Sequence[McpServerSpec],
    traffic: Traffic,
    served_from: Trace | None,
    environ: Mapping[str, str],
    server_environ: Mapping[str, str],
) -> AsyncIterator[McpBoundary]:
    """`served_from` is the trace to replay (None at record, when each real server is started
    or dialed: `${VAR}` in its `command:`/`url:` resolved from `environ`, a stdio server's
    process given `server_environ`)."""
    servers = {
        spec.name: McpServer(
            spec.name,
            traffic,
            tool_mocks(spec.tools),
            served_from.lane(lane_name(spec.name)) if served_from is not None else None,
        )
        for spec in specs
    }
    async with AsyncExitStack() as stack:
        stdio_specs = [spec for spec in specs if spec.command is not None]
        stdio = None
        if stdio_specs:
            real = (
                {}
                if served_from is not None
                else {
                    spec.name: RealServer(resolve(spec.command or "", environ), server_environ)
                    for spec in stdio_specs
                }
            )
            stdio = await stack.enter_async_context(
                StdioStandIns({s.name: servers[s.name] for s in stdio_specs}, real).serving()
            )
        http = {}
        for spec in specs:
            if spec.url is not None:
                from flowproof.mcp.http import HttpStandIn  # aiohttp.web: only when needed

                upstream = None if served_from is not None else resolve(spec.url, environ)
                stand_in = HttpStandIn(servers[spec.name], upstream, spec.port or 0)
                http[spec.name] = await stack.enter_async_context(stand_in.serving())
        declared = {lane_name(spec.name) for spec in specs}
        undeclared = tuple(
            lane.name
            for lane in (served_from.lanes if served_from is not None else ())
            if lane.name.startswith(LANE_PREFIX) and lane.name not in declared and lane.entries
        )
        yield McpBoundary(specs, servers, stdio, http, undeclared)

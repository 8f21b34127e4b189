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

from flowproof._version import __version__
from flowproof.guards.capability import Capability
from flowproof.live.traffic import Traffic
from flowproof.mcp.lane import LANE_PREFIX, lane_name
from flowproof.spec.mocks import tool_mocks
from flowproof.spec.model import McpServerSpec, mcp_variable_suffix
from flowproof.spec.refs import resolve
from flowproof.trace.model import Trace

if TYPE_CHECKING:  # loaded when a flow declares a server: most flows have no `mcp:` block
    from flowproof.mcp.http import HttpStandIn
    from flowproof.mcp.server import RecordingServer, ReplayingServer, ToolServer
    from flowproof.mcp.stdio import RecordRelays, ReplayRelays, StdioStandIns
    from flowproof.outbound.reach import Reach

SERVER_VARIABLE = "FLOWPROOF_MCP_SERVER_"
URL_VARIABLE = "FLOWPROOF_MCP_URL_"


@dataclass(slots=True)
class McpBoundary:
    specs: Sequence[McpServerSpec]
    servers: dict[str, ToolServer]
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
        reasons += [
            reason
            for server in self.servers.values()
            if (reason := server.unserved_reason()) is not None
        ]
        return reasons


@dataclass(frozen=True, slots=True)
class ReplaySide:
    """The tool boundary at replay: every server answered from its lane of `trace`."""

    trace: Trace

    @classmethod
    def nothing_recorded(cls) -> ReplaySide:
        """Lanes with nothing in them: every call the agent makes diverges, and is counted."""
        return cls(Trace((), __version__))

    def servers(
        self, specs: Sequence[McpServerSpec], traffic: Traffic
    ) -> dict[str, ReplayingServer]:
        from flowproof.mcp.server import ReplayingServer

        return {
            spec.name: ReplayingServer(
                spec.name, traffic, tool_mocks(spec.tools), self.trace.lane(lane_name(spec.name))
            )
            for spec in specs
        }

    def stdio(self, specs: Sequence[McpServerSpec], traffic: Traffic) -> ReplayRelays:
        from flowproof.mcp.stdio import ReplayRelays

        return ReplayRelays(self.servers(specs, traffic))

    def http(self, spec: McpServerSpec, traffic: Traffic) -> HttpStandIn:
        from flowproof.mcp.http import HttpStandIn  # aiohttp.web: only when needed

        (server,) = self.servers([spec], traffic).values()
        return HttpStandIn.replaying(server, spec.port or 0)

    def undeclared(self, specs: Sequence[McpServerSpec]) -> tuple[str, ...]:
        """MCP lanes of the trace whose server the spec no longer declares."""
        declared = {lane_name(spec.name) for spec in specs}
        return tuple(
            lane.name
            for lane in self.trace.lanes
            if lane.name.startswith(LANE_PREFIX) and lane.name not in declared and lane.entries
        )


@dataclass(frozen=True, slots=True)
class RecordSide:
    """The tool boundary at record: each real server started or dialed, its lane filled.
    `${VAR}` in a `command:`/`url:` is resolved from `environ`; a stdio server's process is
    given `server_environ`; a real HTTP server is reached as `reach` says (the flow's proxy
    and trust settings, read as record started)."""

    environ: Mapping[str, str]
    server_environ: Mapping[str, str]
    reach: Reach

    def servers(
        self, specs: Sequence[McpServerSpec], traffic: Traffic
    ) -> dict[str, RecordingServer]:
        from flowproof.mcp.server import RecordingServer

        return {
            spec.name: RecordingServer(spec.name, traffic, tool_mocks(spec.tools)) for spec in specs
        }

    def stdio(self, specs: Sequence[McpServerSpec], traffic: Traffic) -> RecordRelays:
        from flowproof.mcp.stdio import RealServer, RecordRelays

        real = {
            spec.name: RealServer(resolve(spec.command or "", self.environ), self.server_environ)
            for spec in specs
        }
        return RecordRelays(self.servers(specs, traffic), real)

    def http(self, spec: McpServerSpec, traffic: Traffic) -> HttpStandIn:
        from flowproof.mcp.http import HttpStandIn  # aiohttp.web: only when needed

        (server,) = self.servers([spec], traffic).values()
        url = resolve(spec.url or "", self.environ)
        return HttpStandIn.recording(server, url, self.reach, spec.port or 0)

    def undeclared(self, specs: Sequence[McpServerSpec]) -> tuple[str, ...]:
        return ()


ToolSide = ReplaySide | RecordSide
"""The phase of the tool boundary, chosen once by the strategy."""


@asynccontextmanager
async def mcp_boundary(
    specs: Sequence[McpServerSpec], traffic: Traffic, side: ToolSide, capability: Capability
) -> AsyncIterator[McpBoundary]:
    """Open the stand-ins of `specs`, served the way `side` says; an HTTP stand-in serves only
    requests that carry the flow's `capability`."""
    servers: dict[str, ToolServer] = {}
    async with AsyncExitStack() as stack:
        stdio_specs = [spec for spec in specs if spec.command is not None]
        stdio = None
        if stdio_specs:
            from flowproof.mcp.stdio import StdioStandIns

            relays = side.stdio(stdio_specs, traffic)
            servers.update(relays.servers)
            stdio = await stack.enter_async_context(StdioStandIns(relays).serving())
        http = {}
        for spec in specs:
            if spec.url is not None:
                stand_in = side.http(spec, traffic)
                stand_in.capability = capability
                servers[spec.name] = stand_in.server
                http[spec.name] = await stack.enter_async_context(stand_in.serving())
        ordered = {spec.name: servers[spec.name] for spec in specs}
        yield McpBoundary(specs, ordered, stdio, http, side.undeclared(specs))

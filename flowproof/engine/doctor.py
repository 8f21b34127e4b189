"""`flowproof doctor`: does this agent's model traffic reach the proxy at all?

It reports what ARRIVED, not that the wiring is correct: an agent with two clients can reach
the proxy with one and a real provider with the other. `record` is what settles that.

Doctor has no spec, so it knows of an MCP server only when it is named (`--mcp NAME` for a
stdio server, `--mcp-url NAME` for a streamable-HTTP one). Each gets the stand-in a flow
would give it, with the same variables injected, in replay mode against an empty lane: there
is no real server behind it, so every call is counted and answered with a JSON-RPC error.

`--agent` and every `--env NAME=VALUE` are resolved like a spec's `agent.command` and
`agent.env` (`${VAR}` from the environment, `${flowproof.*}` handles from the proxy and the
stand-ins), so an agent whose base URL comes from its own config or flags can be diagnosed.
The model calls get canned answers (proxy/canned.py): the first that offers tools is asked
for a tool the agent does not offer, so the agent goes on to a second request without running
anything, and the rest get text. An agent that ends with an error on that is run once more
answered with text only. Every request body is then read for what would stop a trace from
replaying elsewhere or on another day (`engine/replayability.py`), each with the
`normalize:`/`ignore_fields:` line that declares it.

The report is worded once for the terminal (engine/doctor_text.py) and once as JSON
(documents/doctor.py, which the `doctor` tool of `flowproof mcp` returns too).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from flowproof._version import __version__
from flowproof.core.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_PASSED, FlowproofError
from flowproof.core.mocks import ToolMocks
from flowproof.drivers.command import AgentOutcome, run_command
from flowproof.drivers.env import wire_agent
from flowproof.engine.context import FlowContext
from flowproof.engine.drive import DriveResult
from flowproof.engine.front import RunOptions, run_spec
from flowproof.engine.replayability import (
    Finding,
    environment_facts,
    find_hazards,
)
from flowproof.engine.strategy import Replay
from flowproof.host.proxy_environ import (
    LOOPBACK,
    NO_PROXY_VARIABLES,
    ProxySetting,
    proxy_settings,
)
from flowproof.live.traffic import Traffic
from flowproof.matching.rules import STRICT, RequestRules
from flowproof.mcp.boundary import SERVER_VARIABLE, URL_VARIABLE, McpBoundary
from flowproof.mcp.server import ToolServer
from flowproof.proxy.app import WEBSOCKET
from flowproof.proxy.backend import Backend
from flowproof.proxy.canned import CannedBackend
from flowproof.spec.load import LoadedSpec
from flowproof.spec.model import (
    MCP_NAME,
    AgentSpec,
    FlowSpec,
    McpServerSpec,
    mcp_variable_suffix,
)
from flowproof.spec.refs import resolve
from flowproof.trace.model import Trace

DEFAULT_PROMPT = "Say hello."
DEFAULT_TIMEOUT = 60.0
NO_REAL_SERVER = "flowproof doctor starts no real MCP server"
"""The `command:` of a stdio server doctor stands in for: never run (the lane is replayed)."""
NO_REAL_URL = "http://127.0.0.1:9/flowproof-doctor-dials-no-mcp-server"
DOCTOR_SPEC = Path("flowproof-doctor")
"""The flow doctor runs is made in memory, from its options; no file holds it."""
NO_TRACE = Path("flowproof-doctor.trace.json")
"""Never read nor written: doctor's flow replays nothing recorded."""


@dataclass(frozen=True, slots=True)
class McpContact:
    """What reached the stand-in of one MCP server doctor was told of."""

    name: str
    transport: str
    """`stdio` or `http`."""
    variable: str
    """What the agent's MCP config must point at: FLOWPROOF_MCP_SERVER_<NAME> or _URL_."""
    contacts: int
    """Stand-in spawns (stdio) or HTTP requests (http)."""
    calls: int
    """JSON-RPC calls that arrived (every one answered with an error)."""


@dataclass(frozen=True, slots=True)
class Probe:
    """How doctor led the agent past its first request (proxy/canned.py)."""

    at: int | None = None
    """The model request answered with a call to PROBE_TOOL; None when none offered tools."""
    stopped_agent: bool = False
    """The agent ended with an error after that call, so doctor ran it again with text only
    and reports that run."""


@dataclass(frozen=True, slots=True)
class ProxyReport:
    """The proxy variables set in the agent's environment, by name and host only: a proxy URL
    may carry a user and password."""

    settings: tuple[ProxySetting, ...] = ()
    own_entries: tuple[str, ...] = ()
    """The NO_PROXY/no_proxy entries the agent had besides loopback (the user's or --env's)."""

    @classmethod
    def of(cls, agent_env: Mapping[str, str]) -> ProxyReport:
        listed = ",".join(agent_env.get(name, "") for name in NO_PROXY_VARIABLES)
        entries = (entry.strip() for entry in listed.split(","))
        own = [entry for entry in entries if entry and entry.lower() not in LOOPBACK]
        return cls(proxy_settings(agent_env), tuple(dict.fromkeys(own)))


@dataclass(frozen=True, slots=True)
class DoctorReport:
    requests: tuple[tuple[str, str, str], ...]
    """(method, path, what served it: a dialect, or why none did) of every request that
    arrived."""
    agent: AgentOutcome
    port: int
    mcp: tuple[McpContact, ...] = ()
    """One per MCP server named on the command line."""
    findings: tuple[Finding, ...] = ()
    """What in the request bodies would stop a trace from replaying (cwd, date, per-run ids)."""
    outsiders: tuple[tuple[str, str], ...] = ()
    """(method, path) of each request refused for not carrying the flow's capability."""
    probe: Probe = field(default_factory=Probe)
    """Whether a request was answered with the probe call, and what became of it."""
    proxies: ProxyReport = field(default_factory=ProxyReport)
    """The proxy variables the agent was started with, and what flowproof did about them."""

    @property
    def mcp_missed(self) -> list[str]:
        """Named MCP servers the agent never reached."""
        return [contact.name for contact in self.mcp if not contact.contacts]

    @property
    def arrived(self) -> int:
        return len(self.requests)

    @property
    def exit_code(self) -> int:
        """1 on zero model requests, or on a named MCP server never reached, so a setup script
        can stop on it; else 0 (what arrived, not whether the wiring is complete)."""
        return EXIT_PASSED if self.arrived and not self.mcp_missed else EXIT_FAILED


VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DoctorArgumentError(FlowproofError):
    """An argument doctor cannot run with: a usage error (exit 2), whichever door it came in
    by. Each door names the argument its own way (`--mcp-url` on the command line, `mcp_url`
    in the MCP tool)."""

    exit_code = EXIT_CONFIG

    def __init__(self, argument: str, reason: str) -> None:
        self.argument = argument
        """`mcp`, `mcp_url` or `env`."""
        self.reason = reason
        super().__init__(f"{argument}: {reason}")


def check_arguments(mcp: Sequence[str], mcp_url: Sequence[str], env: Mapping[str, str]) -> None:
    """Refuse, before anything runs, an MCP server name a spec could not hold, a server named
    twice, or an `env` name that is not a variable name."""
    seen: set[str] = set()
    for argument, names in (("mcp", mcp), ("mcp_url", mcp_url)):
        for name in names:
            if not re.match(MCP_NAME, name):
                raise DoctorArgumentError(
                    argument,
                    f"{name!r} is not an MCP server name (a letter or digit, then letters, "
                    "digits, '_', '.' or '-')",
                )
            if name in seen:
                raise DoctorArgumentError(argument, f"{name!r} is named twice")
            seen.add(name)
    for name in env:
        if not VARIABLE_NAME.fullmatch(name):
            raise DoctorArgumentError(
                "env",
                f"{name!r} is not a variable name (letters, digits and '_', not starting "
                "with a digit)",
            )


async def run_doctor(
    command: str,
    prompt: str,
    timeout: float,
    mcp: Sequence[str] = (),
    mcp_url: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> DoctorReport:
    """`mcp`, `mcp_url`: the names of the agent's stdio and streamable-HTTP MCP servers.
    `env`: `--env NAME=VALUE` pairs, applied last like a spec's `agent.env`; they and `command`
    may use `${VAR}` and the `${flowproof.*}` handles.

    The agent runs through the same front door as a flow (engine/front.py), with the canned
    strategy: every model call gets a canned answer (the first that offers tools, a call to a
    tool the agent does not have, so it goes on to a second request), every MCP server a
    stand-in. Raises DoctorArgumentError (check_arguments) before anything runs."""
    check_arguments(mcp, mcp_url, env or {})
    servers = [McpServerSpec(name=name, command=NO_REAL_SERVER) for name in mcp]
    servers += [McpServerSpec(name=name, url=NO_REAL_URL) for name in mcp_url]
    spec = _doctor_spec(command, prompt, timeout, servers)
    run = await _run_agent(spec, command, timeout, env or {}, probe=True)
    probe_stopped = run.probed_at is not None and _failed(run.agent)
    if probe_stopped:
        # An agent that stops on a tool it does not have (some frameworks raise) says nothing
        # about its wiring by that: run it once more answered with text only, and report that.
        run = await _run_agent(spec, command, timeout, env or {}, probe=False)
    agent_env = run.agent_env
    now = datetime.now().astimezone()
    variables = {"TZ": agent_env["TZ"]} if agent_env.get("TZ") else {}
    home = agent_env.get("HOME", str(Path.home()))
    facts = environment_facts(os.getcwd(), home, now, _machine_zone(), variables)
    bodies = [turn.request for turn in run.traffic.turns]
    findings = find_hazards(bodies, facts, now)
    return DoctorReport(
        _requests(run.traffic),
        run.agent,
        run.port,
        run.contacts,
        findings,
        tuple(run.traffic.outsiders),
        Probe(run.probed_at, probe_stopped),
        ProxyReport.of(agent_env),
    )


async def _run_agent(
    spec: LoadedSpec, command: str, timeout: float, env: Mapping[str, str], *, probe: bool
) -> _Run:
    """Run the agent once through the same front door as a flow (engine/front.py)."""
    canned = Canned(NO_TRACE, DOCTOR_SPEC, Trace((), __version__), probe=probe)
    seen = _Seen()
    servers, prompt = spec.spec.mcp, spec.prompts[0]

    async def agent(
        context: FlowContext, port: int, stop: asyncio.Event, boundary: McpBoundary
    ) -> DriveResult:
        wiring = wire_agent(context.environ, port, context.capability, boundary, prompt, env)
        resolved = resolve(command, context.environ, wiring.handles)
        # Never set: doctor reports everything the agent sends, refused requests included,
        # so it does not stop the agent at the first one the way a flow does.
        run_to_the_end = asyncio.Event()
        seen.agent = await run_command(resolved, wiring.environment, timeout, run_to_the_end)
        seen.port, seen.agent_env = port, wiring.environment
        seen.contacts = tuple(_contact(server, boundary.servers[server.name]) for server in servers)
        return DriveResult(seen.agent)

    # The spec is made in memory: it has no file, so no suite, and the flow writes nothing.
    await run_spec(spec, RunOptions(strategy=canned), agent)
    assert seen.agent is not None and canned.traffic is not None  # the agent always runs
    return _Run(
        seen.agent, seen.port, seen.agent_env, seen.contacts, canned.traffic, canned.probed_at
    )


def _failed(agent: AgentOutcome) -> bool:
    """The agent ended with an error (a timeout is not retried: it would cost another)."""
    return not agent.timed_out and agent.exit_code != 0


@dataclass(frozen=True, slots=True)
class _Run:
    """One run of the agent under doctor: how it ended and what it sent."""

    agent: AgentOutcome
    port: int
    agent_env: dict[str, str]
    contacts: tuple[McpContact, ...]
    traffic: Traffic
    probed_at: int | None


@dataclass(slots=True)
class _Seen:
    """What doctor's driver saw of the agent's run."""

    agent: AgentOutcome | None = None
    port: int = 0
    agent_env: dict[str, str] = field(default_factory=dict)
    contacts: tuple[McpContact, ...] = ()


@dataclass(slots=True)
class Canned(Replay):
    """The strategy doctor runs an agent with: a replay of nothing recorded, so the MCP servers
    are stand-ins with no lanes, whose model is answered by proxy/canned.py instead of a
    trace; any number of turns is fine, and nothing is written."""

    probe: bool = True
    """Answer the first request that offers tools with a call to a tool the agent does not
    offer (proxy/canned.py), so that it sends a second request."""
    traffic: Traffic | None = None
    """What the agent sent, kept for doctor's report."""
    probed_at: int | None = None
    """Which model request was answered with the probe call, if any."""

    @asynccontextmanager
    async def backend(
        self, traffic: Traffic, mocks: ToolMocks, rules: RequestRules = STRICT
    ) -> AsyncIterator[Backend]:
        self.traffic = traffic
        canned = CannedBackend(probe=self.probe)
        try:
            yield canned
        finally:
            self.probed_at = canned.probed_at

    @property
    def expected_turns(self) -> int | None:
        return None

    def tool_boundary_reasons(self, boundary: McpBoundary, reasons: list[str]) -> list[str]:
        return []  # doctor reports each stand-in's contacts itself


def _doctor_spec(
    command: str, prompt: str, timeout: float, servers: list[McpServerSpec]
) -> LoadedSpec:
    """The flow doctor runs: its agent, its MCP servers, its prompt, and no assertion."""
    spec = FlowSpec(
        name="doctor",
        app="agent",
        agent=AgentSpec(command=command, timeout=timeout),
        mcp=servers,
        steps=[{"prompt": prompt}],
    )
    return LoadedSpec(DOCTOR_SPEC, spec, (prompt,), ())


def _machine_zone() -> str:
    """This machine's time zone name (`Etc/UTC`), as agents that print one read it: Debian's
    /etc/timezone, else the zoneinfo path /etc/localtime links to; "" when neither says."""
    try:
        return Path("/etc/timezone").read_text(encoding="utf-8").strip()
    except OSError:
        pass
    target = os.path.realpath("/etc/localtime")
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else ""


def _requests(traffic: Traffic) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (method, path, _served(method, dialect)) for method, path, dialect in traffic.requests
    )


def _served(method: str, dialect: str) -> str:
    if dialect == WEBSOCKET:
        return "WebSocket upgrade, refused with 426 (flowproof serves model calls over HTTP)"
    if dialect == "?":
        return "not a model API flowproof serves (404)"
    if method != "POST":
        return f"{dialect}, but not a model call: only POST is (405)"
    return dialect


def _contact(spec: McpServerSpec, server: ToolServer) -> McpContact:
    stdio = spec.command is not None
    prefix = SERVER_VARIABLE if stdio else URL_VARIABLE
    return McpContact(
        name=spec.name,
        transport="stdio" if stdio else "http",
        variable=prefix + mcp_variable_suffix(spec.name),
        contacts=server.contacts,
        calls=server.arrived,
    )

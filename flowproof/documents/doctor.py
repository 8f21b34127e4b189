"""doctor's --json document (and the `doctor` tool of `flowproof mcp`, which returns the same)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

from flowproof.runrecord.base import RecordModel

if TYPE_CHECKING:
    from flowproof.containment.probe import Capability
    from flowproof.engine.doctor import DoctorReport


class DoctorRequest(RecordModel):
    """Model requests that arrived alike, counted."""

    method: str
    path: str
    """As the agent sent it, after the flow's capability."""
    served_by: str
    """The dialect that answered it, or why none did."""
    count: int


class RefusedRequest(RecordModel):
    """Requests refused (403) for not carrying the capability, counted."""

    method: str
    path: str
    count: int


class DoctorMcp(RecordModel):
    """What reached the stand-in of one MCP server named with --mcp or --mcp-url."""

    name: str
    transport: Literal["stdio", "http"]
    variable: str
    """What the agent's MCP config must point at: FLOWPROOF_MCP_SERVER_<NAME> or
    FLOWPROOF_MCP_URL_<NAME>."""
    contacts: int
    """Stand-in spawns (stdio) or HTTP requests (http); 0: never reached."""
    calls: int
    """JSON-RPC calls that arrived (every one answered with an error)."""


class DoctorProbe(RecordModel):
    """How doctor led the agent past its first request."""

    at: int | None
    """The model request answered with a call to a tool the agent does not offer; None when
    no request offered tools."""
    stopped_agent: bool
    """The agent ended with an error on that call, so doctor ran it again answering with text
    only, and reports that run."""


class DoctorAgent(RecordModel):
    """How the agent process ended."""

    exit_code: int | None
    """None when doctor stopped it at the timeout."""
    timed_out: bool
    stderr_tail: str
    """The end of what it printed on stderr (redacted)."""


class ProxyVariable(RecordModel):
    """A proxy variable set for the agent: its name and the proxy's host, never its URL."""

    name: str
    host: str
    """`host:port`, `host`, or "" when the value names no host that can be read."""


class DoctorSighting(RecordModel):
    request: int
    """Which model request, from 1."""
    path: str
    """Where in its body: `system[2].text`, `metadata.user_id`."""
    value: str
    """What was seen there."""


class DoctorFinding(RecordModel):
    """Something in the request bodies that would stop a trace from replaying elsewhere or on
    another day, with the spec line that declares it."""

    label: str
    sightings: list[DoctorSighting]
    normalize: str | None
    """The `normalize:` entry that answers it."""
    ignore_field: str | None
    """The `ignore_fields:` path that answers it."""
    why_not: str | None
    """Why neither can: the value sits inside conversation content."""


class Containment(RecordModel):
    """Egress containment on this host."""

    contained: bool
    tier: str
    """`contained (linux seccomp)` or `not contained (<reason>)`."""
    notes: list[str]


class DoctorDocument(RecordModel):
    """What `flowproof doctor --json` prints: what the agent sent when run once against canned
    replies."""

    exit_code: int
    """0 when a model request arrived and every named MCP server was reached, else 1."""
    proxy_port: int
    """The loopback port of flowproof's proxy during the run."""
    model_requests: int
    """How many model requests arrived (0: the agent's client did not use the base URL
    flowproof injects)."""
    requests: list[DoctorRequest]
    refused: list[RefusedRequest]
    mcp: list[DoctorMcp]
    """One per MCP server named on the command line."""
    mcp_missed: list[str]
    """The named MCP servers the agent never reached."""
    probe: DoctorProbe
    agent: DoctorAgent
    proxy_variables: list[ProxyVariable]
    findings: list[DoctorFinding]
    declare: list[str]
    """The spec lines (`normalize:`, `ignore_fields:`) that declare the findings."""
    containment: Containment


def doctor_document(report: DoctorReport, capability: Capability) -> dict[str, Any]:
    """The one JSON rendering of a doctor run: `flowproof doctor --json` prints it, and the
    `doctor` tool of `flowproof mcp` returns it."""
    from flowproof.engine.replayability import suggested_lines

    agent = report.agent
    document = DoctorDocument(
        exit_code=report.exit_code,
        proxy_port=report.port,
        model_requests=report.arrived,
        requests=[
            DoctorRequest(method=method, path=path, served_by=served, count=count)
            for (method, path, served), count in Counter(report.requests).items()
        ],
        refused=[
            RefusedRequest(method=method, path=path, count=count)
            for (method, path), count in Counter(report.outsiders).items()
        ],
        mcp=[
            DoctorMcp(
                name=contact.name,
                transport="stdio" if contact.transport == "stdio" else "http",
                variable=contact.variable,
                contacts=contact.contacts,
                calls=contact.calls,
            )
            for contact in report.mcp
        ],
        mcp_missed=report.mcp_missed,
        probe=DoctorProbe(at=report.probe.at, stopped_agent=report.probe.stopped_agent),
        agent=DoctorAgent(
            exit_code=agent.exit_code, timed_out=agent.timed_out, stderr_tail=agent.stderr_tail
        ),
        proxy_variables=[
            ProxyVariable(name=setting.name, host=setting.host)
            for setting in report.proxies.settings
        ],
        findings=[
            DoctorFinding(
                label=finding.label,
                sightings=[
                    DoctorSighting(request=seen.request, path=seen.path, value=seen.value)
                    for seen in finding.sightings
                ],
                normalize=finding.normalize,
                ignore_field=finding.ignore_field,
                why_not=finding.why_not,
            )
            for finding in report.findings
        ],
        declare=suggested_lines(report.findings),
        containment=Containment(
            contained=capability.contained, tier=capability.tier, notes=list(capability.notes)
        ),
    )
    return document.model_dump(mode="json")

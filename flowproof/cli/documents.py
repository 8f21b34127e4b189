"""The JSON documents `--json` prints for `doctor`, `trace lint`, `report` and for a command that
ended in an error; `run` and `record` print their run record (runrecord/model.py).

Each document is a model here, documented by the docstrings under its fields as the run record
is, and its JSON schema is generated from it (`python -m flowproof.cli.schemas NAME`) and
committed as docs/schemas/<NAME>.schema.json; a unit test keeps the committed files current.
Loaded only under `--json`: a command without it never builds these models.

The builders take what the command already computed for its human text, so both say the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from flowproof.core.errors import SpecError
from flowproof.runrecord.base import RecordModel

if TYPE_CHECKING:
    from flowproof.containment.probe import Capability
    from flowproof.engine.doctor import DoctorReport
    from flowproof.runrecord.model import RunRecord
    from flowproof.trace.lint import Finding as LintHit

ErrorKind = Literal["usage", "config", "internal"]


class ErrorDetail(RecordModel):
    """Why the command stopped before it had a result."""

    kind: ErrorKind
    """`usage`: the command line (exit 2); `config`: a spec, trace, run record or setting
    flowproof cannot use (exit 2); `internal`: a bug in flowproof (exit 3)."""
    type: str
    """The error's class (`SpecError`, `ConfigError`, `UsageError`, ...)."""
    message: str
    """The whole error as printed on stderr, after `error: `."""
    file: str | None
    """The file at fault, when the error names one."""
    line: int | None
    """Its line, when known."""
    exit_code: int
    """The command's exit code (the same as without --json)."""
    traceback: str | None
    """An internal error: where its traceback was saved (None when it could not be)."""


class ErrorDocument(RecordModel):
    """What a flowproof command prints with --json when it ends in an error before it has a
    result of its own."""

    error: ErrorDetail


def error_document(
    kind: ErrorKind, error: Exception, exit_code: int, saved: Path | None = None
) -> dict[str, Any]:
    import click

    from flowproof.cli.boundary import one_line

    file, line = None, None
    if isinstance(error, SpecError):
        file, line = str(error.path), error.line
    if isinstance(error, click.ClickException):
        message = error.format_message()
    elif kind == "internal":
        message = one_line(error)
    else:
        message = str(error)
    detail = ErrorDetail(
        kind=kind,
        type=type(error).__name__,
        message=message,
        file=file,
        line=line,
        exit_code=exit_code,
        traceback=str(saved) if saved else None,
    )
    return ErrorDocument(error=detail).model_dump(mode="json")


# doctor


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


def doctor_document(report: DoctorReport, capability: Capability, exit_code: int) -> dict[str, Any]:
    from flowproof.engine.replayability import suggested_lines

    agent = report.agent
    document = DoctorDocument(
        exit_code=exit_code,
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


# trace lint


class LintFinding(RecordModel):
    """Something that must not be committed, found in a trace."""

    trace: str
    """The trace file, as found under the paths given."""
    path: str
    """Where in the file: `lanes.model[2].request.messages[1].content`, or `(file)` for an
    orphan trace."""
    rule: str
    """What was found: `an OpenAI API key`, `a header-like key 'authorization'`."""
    remedy: str
    """What makes the finding go away."""


class LintDocument(RecordModel):
    """What `flowproof trace lint --json` prints."""

    exit_code: int
    """0 clean, 1 on findings."""
    traces: list[str]
    """Every trace scanned."""
    findings: list[LintFinding]
    untraced_specs: list[str]
    """Specs with no trace yet: reported, not counted (`run` fails them anyway)."""


def lint_document(
    traces: Sequence[Path], findings: Sequence[LintHit], untraced: Sequence[Path], exit_code: int
) -> dict[str, Any]:
    document = LintDocument(
        exit_code=exit_code,
        traces=[str(trace) for trace in traces],
        findings=[
            LintFinding(trace=hit.trace, path=hit.path, rule=hit.rule, remedy=hit.remedy)
            for hit in findings
        ],
        untraced_specs=[str(spec) for spec in untraced],
    )
    return document.model_dump(mode="json")


# report


class WrittenReport(RecordModel):
    kind: Literal["html", "markdown", "junit"]
    path: str
    """As given on the command line."""


class FlowCounts(RecordModel):
    """The run's flows by outcome, as its summary line counts them."""

    passed: int
    failed: int
    """Failed, not counting a flow a signal cut short."""
    interrupted: int
    not_run: int
    """Specs that could not be run at all (configuration errors)."""


class ReportDocument(RecordModel):
    """What `flowproof report --json` prints: which run record was rendered, and where."""

    run_id: str
    """The run rendered (with --merge: the first shard's)."""
    mode: Literal["record", "replay"]
    run_exit_code: int
    """The exit code the run itself ended with (not this command's)."""
    sources: list[str]
    """The run records read (report.json files): several with --merge."""
    merged: bool
    written: list[WrittenReport]
    """The report files written; empty when none was asked for."""
    flows: FlowCounts


def report_document(
    record: RunRecord, sources: Sequence[Path], written: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    flows = record.flows
    document = ReportDocument(
        run_id=record.run_id,
        mode=record.mode,
        run_exit_code=record.exit_code,
        sources=[str(source) for source in sources],
        merged=len(sources) > 1,
        written=[WrittenReport.model_validate({"kind": k, "path": p}) for k, p in written],
        flows=FlowCounts(
            passed=sum(flow.verdict == "pass" for flow in flows),
            failed=sum(flow.verdict == "fail" and flow.interrupted is None for flow in flows),
            interrupted=sum(flow.interrupted is not None for flow in flows),
            not_run=len(record.errors),
        ),
    )
    return document.model_dump(mode="json")

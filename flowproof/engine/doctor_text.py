"""The words of doctor's report (engine/doctor.py), as `flowproof doctor` prints them: its one
text rendering. Its one JSON rendering, which the `doctor` tool of `flowproof mcp` returns too,
is flowproof/documents/doctor.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from flowproof.core.words import plural
from flowproof.drivers.command import AgentOutcome
from flowproof.drivers.env import ORIGIN_ONLY, WITH_V1, WITHOUT_V1
from flowproof.engine.doctor import DoctorReport, McpContact, Probe, ProxyReport
from flowproof.engine.replayability import Finding, declare_lines
from flowproof.host.proxy_environ import LOOPBACK, NO_PROXY_VARIABLES
from flowproof.proxy.canned import PROBE_TOOL


def doctor_text(report: DoctorReport) -> str:
    """The report as `flowproof doctor` prints it: what arrived, what the agent did, and what to
    change or what arriving does not prove."""
    lines = [
        f"{plural(report.arrived, 'model request')} arrived at "
        f"flowproof's proxy (127.0.0.1:{report.port})."
    ]
    for (method, path, served), count in Counter(report.requests).items():
        lines.append(f"  {count} × {method} {path}  →  {served}")
    if report.mcp:
        contacted = sum(bool(contact.contacts) for contact in report.mcp)
        lines.append(
            f"{contacted} of {plural(len(report.mcp), 'MCP stand-in')} "
            "reached (doctor has no MCP server behind them: every call is answered "
            "with an error, so an agent may stop at its first):"
        )
        for contact in report.mcp:
            lines += _contact_lines(contact)
    lines += _outsider_lines(report.outsiders)
    lines += _probe_lines(report.probe)
    lines.append(_agent_line(report.agent))
    lines += _proxy_lines(report.proxies)
    lines += _replayability(report.findings)
    lines += _next_step(report)
    return "\n".join(lines)


def _contact_lines(contact: McpContact) -> list[str]:
    what = "spawned" if contact.transport == "stdio" else "contacted"
    times = plural(contact.contacts, "time")
    if not contact.contacts:
        hint = "the command of its MCP server" if contact.transport == "stdio" else "its URL"
        return [
            f"  mcp {contact.name} ({contact.transport}): never {what}. Point {hint} at "
            f"${contact.variable}."
        ]
    return [
        f"  mcp {contact.name} ({contact.transport}): {what} {times}; "
        f"{plural(contact.calls, 'call')} arrived"
    ]


def _probe_lines(probe: Probe) -> list[str]:
    if probe.stopped_agent:
        return [
            f"The agent ended with an error when asked for {PROBE_TOOL}, a tool it does not "
            "offer, so doctor ran it again answering every request with text; that run is "
            "reported here, and what the agent sends after its first request was not seen "
            "(`flowproof record` sees every request)."
        ]
    if probe.at is None:
        return []
    return [
        f"Request {probe.at} was answered with a call to {PROBE_TOOL}, a tool the agent does "
        "not offer (so nothing runs), to see what it sends after its first request; every "
        "other request got a canned text."
    ]


def _proxy_lines(proxies: ProxyReport) -> list[str]:
    if not proxies.settings:
        return []
    by_host: dict[str, list[str]] = {}
    for setting in proxies.settings:
        by_host.setdefault(setting.host or "a host that could not be read", []).append(setting.name)
    named = "; ".join(f"{', '.join(names)} ({host})" for host, names in by_host.items())
    kept = (
        f", after its own entries ({', '.join(proxies.own_entries)})" if proxies.own_entries else ""
    )
    return [
        f"Proxy variables set for the agent: {named}.",
        f"flowproof added {', '.join(LOOPBACK[:-1])} and {LOOPBACK[-1]} to the agent's "
        f"{' and '.join(NO_PROXY_VARIABLES)}{kept}, so its calls to flowproof's proxy and "
        "MCP stand-ins on loopback go direct; its other traffic goes through the proxy as "
        "before. A client that takes its proxy from elsewhere (its own config file or "
        "variables) needs loopback excluded there too.",
    ]


def _next_step(report: DoctorReport) -> list[str]:
    """What the report ends with: what to change when nothing arrived, or what arriving
    does not prove."""
    if report.arrived:
        return [
            "This shows the client honours the injected base URL. It does not show "
            "that every model call goes through it; `flowproof record` settles that."
        ]
    if report.outsiders:
        return []  # the agent reached the port: the refused requests' lines say what to do
    if any(contact.calls for contact in report.mcp):
        return [
            "No model request arrived, but MCP calls did: the agent may have stopped at the "
            "error doctor answers its first MCP call with. Run doctor without --mcp/--mcp-url "
            "(with a prompt that needs no tool) to check the model wiring alone."
        ]
    return _zero_hint()


def _replayability(findings: Sequence[Finding]) -> list[str]:
    if not findings:
        return []
    lines = [
        "What in these requests would make a trace fail to replay at another path, with "
        "another HOME, on another day or in the next run:"
    ]
    for finding in findings:
        lines += finding.render()
    return lines + declare_lines(findings)


def _agent_line(agent: AgentOutcome) -> str:
    if agent.timed_out:
        return (
            "The agent was still running at the timeout and was stopped (doctor cannot "
            "tell a hang from a slow agent)."
        )
    line = f"The agent exited with code {agent.exit_code}."
    if agent.exit_code and agent.stderr_tail.strip():
        line += " Its stderr ended with:\n" + "\n".join(
            f"  | {text}" for text in agent.stderr_tail.splitlines()
        )
    return line


def _outsider_lines(outsiders: Sequence[tuple[str, str]]) -> list[str]:
    """Requests refused for not carrying the capability: in doctor, most likely the agent's own
    client, which built its URL from the port rather than from the base URL it was given."""
    if not outsiders:
        return []
    were = "was" if len(outsiders) == 1 else "were"
    lines = [
        f"{plural(len(outsiders), 'request')} arrived without flowproof's capability and "
        f"{were} refused (403):"
    ]
    counted = Counter(outsiders).items()
    lines += [f"  {count} × {method} {path}" for (method, path), count in counted]
    lines += [
        "Every URL flowproof gives the agent (the injected base URLs, FLOWPROOF_MCP_URL_<NAME> "
        "and the ${flowproof.*} handles) starts its path with a secret only the agent is "
        "given, so that no other process on the machine can use the proxy. Point the client at "
        "one of them exactly as given, path included: a URL written with the port alone "
        "(http://127.0.0.1:<port>/v1) lacks it, and so does one a client rebuilt from the host "
        "and port of the URL it was given (docs/wiring.md)."
    ]
    return lines


def _zero_hint() -> list[str]:
    return [
        "Zero means the agent's model client did not use the base URL flowproof injects:",
        f"  {', '.join(WITH_V1)} = http://127.0.0.1:<port>/<capability>/v1",
        f"  {', '.join((*WITHOUT_V1, *ORIGIN_ONLY))} = http://127.0.0.1:<port>/<capability>",
        "If your client reads another variable (or a config file), map it in the spec's "
        "agent.env with a handle:",
        '  MY_CLIENT_BASE_URL: "${flowproof.proxy_url}"        # includes /v1',
        '  MY_OTHER_BASE_URL: "${flowproof.proxy_url_no_v1}"   # the client appends /v1',
        "If the agent answered without calling a model at all, try --prompt with a task that "
        "needs one.",
    ]

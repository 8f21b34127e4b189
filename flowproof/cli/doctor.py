"""`flowproof doctor --agent CMD [--env NAME=VALUE] [--mcp NAME] [--mcp-url NAME]`: report the
model requests and MCP contacts an agent sends, and what in them would stop a trace from
replaying; no key needed. With `--json`, the same as one document on stdout
(docs/schemas/doctor.schema.json)."""

from __future__ import annotations

import asyncio
import re
import sys

import click

from flowproof.cli.output import emit, json_wanted, out
from flowproof.containment.probe import capability, containment_report
from flowproof.engine.doctor import DEFAULT_PROMPT, DEFAULT_TIMEOUT, run_doctor
from flowproof.spec.model import MCP_NAME


def run_doctor_command(
    command: str,
    prompt: str | None,
    timeout: float | None,
    mcp: tuple[str, ...] = (),
    mcp_url: tuple[str, ...] = (),
    env: tuple[str, ...] = (),
) -> None:
    _check_names(mcp, mcp_url)
    variables = _parse_env(env)
    report = asyncio.run(
        run_doctor(
            command, prompt or DEFAULT_PROMPT, timeout or DEFAULT_TIMEOUT, mcp, mcp_url, variables
        )
    )
    out(report.render())
    out(containment_report())
    # Exit 1 on zero model requests, or on a named MCP server never reached, so a setup script
    # can stop on it; anything else is 0 (what arrived, not whether the wiring is complete).
    exit_code = 0 if report.arrived and not report.mcp_missed else 1
    if json_wanted():
        from flowproof.documents.doctor import doctor_document

        emit(doctor_document(report, capability(), exit_code))
    sys.exit(exit_code)


def _check_names(mcp: tuple[str, ...], mcp_url: tuple[str, ...]) -> None:
    seen: set[str] = set()
    for option, names in (("--mcp", mcp), ("--mcp-url", mcp_url)):
        for name in names:
            if not re.match(MCP_NAME, name):
                raise click.BadParameter(
                    f"{name!r} is not an MCP server name (a letter or digit, then letters, "
                    "digits, '_', '.' or '-')",
                    param_hint=option,
                )
            if name in seen:
                raise click.BadParameter(f"{name!r} is named twice", param_hint=option)
            seen.add(name)


def _parse_env(pairs: tuple[str, ...]) -> dict[str, str]:
    variables: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise click.BadParameter(
                f"{pair!r} is not NAME=VALUE (NAME: letters, digits and '_', not starting "
                "with a digit)",
                param_hint="--env",
            )
        variables[name] = value
    return variables

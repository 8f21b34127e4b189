"""`flowproof doctor --agent CMD [--env NAME=VALUE] [--mcp NAME] [--mcp-url NAME]`: report the
model requests and MCP contacts an agent sends, and what in them would stop a trace from
replaying; no key needed. With `--json`, the same as one document on stdout
(docs/schemas/doctor.schema.json)."""

from __future__ import annotations

import asyncio
import sys

import click

from flowproof.cli.output import emit, json_wanted, out
from flowproof.containment.probe import capability, containment_report
from flowproof.engine.doctor import (
    DEFAULT_PROMPT,
    DEFAULT_TIMEOUT,
    DoctorArgumentError,
    run_doctor,
)
from flowproof.engine.doctor_text import doctor_text


def run_doctor_command(
    command: str,
    prompt: str | None,
    timeout: float | None,
    mcp: tuple[str, ...] = (),
    mcp_url: tuple[str, ...] = (),
    env: tuple[str, ...] = (),
) -> None:
    variables = _parse_env(env)
    try:
        report = asyncio.run(
            run_doctor(
                command,
                prompt or DEFAULT_PROMPT,
                timeout or DEFAULT_TIMEOUT,
                mcp,
                mcp_url,
                variables,
            )
        )
    except DoctorArgumentError as refused:
        # click's own usage error, so the command line reads like any other bad option
        option = "--" + refused.argument.replace("_", "-")
        raise click.BadParameter(refused.reason, param_hint=option) from None
    out(doctor_text(report))
    out(containment_report())
    if json_wanted():
        from flowproof.documents.doctor import doctor_document

        emit(doctor_document(report, capability()))
    sys.exit(report.exit_code)


def _parse_env(pairs: tuple[str, ...]) -> dict[str, str]:
    """`NAME=VALUE` pairs as a mapping; the names are checked with doctor's other arguments
    (engine/doctor.py `check_arguments`)."""
    variables: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals:
            raise click.BadParameter(
                f"{pair!r} is not NAME=VALUE (NAME: letters, digits and '_', not starting "
                "with a digit)",
                param_hint="--env",
            )
        variables[name] = value
    return variables

"""The `flowproof` command. Only click is imported here, so `flowproof --version` stays instant;
each subcommand imports the engine when it runs."""

from __future__ import annotations

import click

from flowproof import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="flowproof", message="%(prog)s %(version)s"
)
def main() -> None:
    """Deterministic tests for AI agents: record the model traffic once, replay it in CI."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
def run(paths: tuple[str, ...]) -> None:
    """Replay every spec under PATHS (default: specs/) against its trace. Never records."""
    from flowproof.cli.flows import run_flows

    run_flows(paths, "replay")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
def record(paths: tuple[str, ...]) -> None:
    """Record every spec under PATHS against the real model; writes a trace per passing flow."""
    from flowproof.cli.flows import run_flows

    run_flows(paths, "record")


@main.command("help-matchers")
def help_matchers() -> None:
    """List the argument matchers `where` clauses accept."""
    from flowproof.assertions.docgen import render_matchers_help

    click.echo(render_matchers_help())

"""The `flowproof` command. Only click is imported here, so `flowproof --version` stays instant;
each subcommand imports the engine when it runs.

Exit codes: 0 every flow passed, 1 a flow failed, 2 a usage or configuration error, 3 an
internal error (cli/boundary.py is the one place exceptions become exit codes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from flowproof._version import __version__
from flowproof.cli.boundary import GuardedGroup

RUNS_DIR_HELP = "Where run records go (default: $FLOWPROOF_RUNS_DIR, else .flowproof/runs)."


def _json_option(command: Any) -> Any:
    """`--json`: the command's result as one JSON document on stdout, human text on stderr
    (cli/output.py). Eager, so it is on before any other option can fail."""
    return click.option(
        "--json",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_use_json,
        help="Print the result as one JSON document on stdout (docs/json.md); the human text "
        "stays on stderr and the exit code is the same.",
    )(command)


def _use_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    from flowproof.cli.output import use_json

    # `flowproof --json run` and `flowproof run --json` alike: the top level sets it (or clears
    # it) for each invocation, a command only turns it on.
    if value or ctx.parent is None:
        use_json(value)
    return value


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@_json_option
@click.version_option(
    __version__, "--version", prog_name="flowproof", message="%(prog)s %(version)s"
)
def main() -> None:
    """Deterministic tests for AI agents: record the model traffic once, replay it in CI."""
    import os

    from flowproof.guards.redaction import REDACT

    REDACT.hide_record_keys(os.environ)


def _report_options(command: Any) -> Any:
    for kind in ("junit", "markdown", "html"):
        command = click.option(
            f"--{kind}",
            kind,
            metavar="FILE",
            default=None,
            help=f"Also write the {kind} report of this run to FILE.",
        )(command)
    return command


def _runs_dir_option(command: Any) -> Any:
    return click.option("--runs-dir", "runs_dir", metavar="DIR", default=None, help=RUNS_DIR_HELP)(
        command
    )


def _jobs_option(default_help: str) -> Callable[[Any], Any]:
    return click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help=f"Run up to N flows at once ({default_help}).",
    )


def _shard_option(command: Any) -> Any:
    return click.option(
        "--shard",
        default=None,
        metavar="K/N",
        help="Run only shard K of N: a stable partition of the flows by spec path, so N CI "
        "machines each run one (combine them with `flowproof report --merge`).",
    )(command)


@main.command()
@click.option(
    "--agent",
    "command",
    default=None,
    metavar="CMD",
    help="The shell command that starts your agent: the starter flow runs it, and "
    "`flowproof doctor` runs it once (a canned reply, no model, no key) so the flow declares "
    "what would stop it from replaying.",
)
@click.option(
    "--no-doctor",
    is_flag=True,
    help="With --agent, do not run the agent: the flow says how to get doctor's lines.",
)
def init(command: str | None, no_doctor: bool) -> None:
    """Start a project: write specs/example.yaml, the .gitignore line for .flowproof/ and the
    replay and re-record workflows under .github/workflows/. Never replaces a file."""
    from flowproof.cli.init import init_command

    init_command(command, doctor=not no_doctor)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@_report_options
@_runs_dir_option
@_jobs_option("default: the number of CPUs")
@_shard_option
@_json_option
def run(
    paths: tuple[str, ...],
    html: str | None,
    markdown: str | None,
    junit: str | None,
    runs_dir: str | None,
    jobs: int | None,
    shard: str | None,
) -> None:
    """Replay every spec under PATHS (default: specs/) against its trace. Never records."""
    from flowproof.cli.flows import run_flows

    reports = {"html": html, "markdown": markdown, "junit": junit}
    run_flows(
        paths, "replay", reports=reports, runs_dir=runs_dir, jobs=jobs or _cpus(), shard=shard
    )


def _cpus() -> int:
    import os

    return os.cpu_count() or 1


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--diff",
    "show_diff",
    is_flag=True,
    help="After a passing re-record, print what changed against the previous trace.",
)
@click.option(
    "--keep-matching",
    is_flag=True,
    help="Heal: serve every request that matches the existing trace from it (its bytes kept) "
    "and forward only the rest to the real model.",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Replay each new trace at once as CI will tomorrow (a copy at another path, fresh "
    "HOME and TMPDIR, another local date, no upstream) and print the spec lines it needs; "
    "exit 1 when one would not replay.",
)
@click.option(
    "--upstream-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600,  # proxy/__init__.py DEFAULT_UPSTREAM_TIMEOUT, not imported: --version stays lean
    show_default=True,
    metavar="SECONDS",
    help="How long one model answer may take, whole, before the flow fails naming its turn "
    "(record asks for complete answers: a slow model can take minutes).",
)
@_runs_dir_option
@_jobs_option("default: 1, one flow at a time against the real model")
@_shard_option
@_json_option
def record(
    paths: tuple[str, ...],
    show_diff: bool,
    keep_matching: bool,
    verify: bool,
    upstream_timeout: float,
    runs_dir: str | None,
    jobs: int | None,
    shard: str | None,
) -> None:
    """Record every spec under PATHS against the real model; writes a trace per passing flow."""
    from flowproof.cli.flows import run_flows

    run_flows(
        paths,
        "record",
        show_diff=show_diff,
        runs_dir=runs_dir,
        jobs=jobs or 1,
        shard=shard,
        keep_matching=keep_matching,
        verify=verify,
        upstream_timeout=upstream_timeout,
    )


@main.command()
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=str))
@click.argument("new", type=click.Path(exists=True, dir_okay=False, path_type=str))
def diff(old: str, new: str) -> None:
    """Print the trajectory changes between two trace files (exit 0 same, 1 changed)."""
    from flowproof.cli.diff import diff_files

    diff_files(old, new)


@main.command()
@click.argument("spec", type=click.Path(path_type=str))
@click.option(
    "--write",
    is_flag=True,
    help="Add the steps to SPEC itself, after its existing steps, keeping its comments and "
    "layout (refused when SPEC already has assertion steps).",
)
def suggest(spec: str, write: bool) -> None:
    """Print assertion steps that SPEC's recorded trace satisfies: each tool call with the
    arguments threaded from the prompt or an earlier tool result, the tools left alone, and
    a value the reply repeats."""
    from flowproof.cli.suggest import suggest_command

    suggest_command(spec, write)


@main.command()
@click.option(
    "--agent",
    "command",
    required=True,
    help="The shell command that starts the agent; ${VAR} and ${flowproof.*} handles "
    "(${flowproof.proxy_url}, ...) are resolved as in a spec's agent.command.",
)
@click.option(
    "--prompt",
    default=None,
    help="The task handed over in FLOWPROOF_PROMPT "
    '(default "Say hello."); use one that makes your agent call a model.',
)
@click.option(
    "--timeout", default=None, type=float, help="Seconds before the agent is stopped (default 60)."
)
@click.option(
    "--mcp",
    "mcp",
    multiple=True,
    metavar="NAME",
    help="A stdio MCP server the agent uses: doctor injects FLOWPROOF_MCP_SERVER_<NAME> and "
    "reports whether the agent spawned the stand-in (repeatable).",
)
@click.option(
    "--mcp-url",
    "mcp_url",
    multiple=True,
    metavar="NAME",
    help="A streamable-HTTP MCP server the agent uses: doctor injects FLOWPROOF_MCP_URL_<NAME> "
    "and reports whether the agent contacted it (repeatable).",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set a variable in the agent's environment, last, like a spec's agent.env; the value "
    "may use ${VAR} and ${flowproof.*} handles (repeatable).",
)
@_json_option
def doctor(
    command: str,
    prompt: str | None,
    timeout: float | None,
    mcp: tuple[str, ...],
    mcp_url: tuple[str, ...],
    env: tuple[str, ...],
) -> None:
    """Run an agent once against a canned reply and report the model requests (and, with
    --mcp/--mcp-url, the MCP contacts) that arrived."""
    from flowproof.cli.doctor import run_doctor_command

    run_doctor_command(command, prompt, timeout, mcp, mcp_url, env)


@main.command()
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@click.option(
    "--merge",
    is_flag=True,
    help="Combine the RUNs (the run records of a suite's shards) into the one report an "
    "unsharded run would have given.",
)
@click.option("--html", default=None, metavar="FILE", help="Write the HTML report to FILE.")
@click.option(
    "--markdown",
    default=None,
    metavar="FILE",
    help="Write the PR-comment markdown (failures first, < 65,536 characters) to FILE.",
)
@click.option(
    "--junit", default=None, metavar="FILE", help="Write JUnit XML (one testcase per flow) to FILE."
)
@_runs_dir_option
@_json_option
def report(
    runs: tuple[str, ...],
    merge: bool,
    html: str | None,
    markdown: str | None,
    junit: str | None,
    runs_dir: str | None,
) -> None:
    """Render a run record as HTML, PR-comment markdown or JUnit XML.

    RUN is a run id, a run directory or a report.json (default: the latest in the runs dir);
    with --merge, give the run record of every shard.
    """
    from flowproof.cli.report import report_command

    if len(runs) > 1 and not merge:
        raise click.UsageError("give one RUN, or several with --merge (the shards of one suite)")
    if merge and not runs:
        raise click.UsageError("--merge needs the run records of the shards: RUN RUN ...")
    report_command(runs, html, markdown, junit, runs_dir)


@main.command()
@click.option("--runs-dir", "--runs", "runs_dir", default=None, metavar="DIR", help=RUNS_DIR_HELP)
@click.option("--html", default=None, metavar="FILE", help="Also write the summary as HTML.")
@click.option("--markdown", default=None, metavar="FILE", help="Also write it as markdown.")
@click.option(
    "--since",
    default=None,
    metavar="RUN_ID|DATE",
    help="Also show the controls added, removed and whose verdict changed since that run, or "
    "since the last run at or before DATE (ISO 8601: 2026-12-01, 2026-12-01T08:00:00Z).",
)
@_json_option
def audit(runs_dir: str | None, html: str | None, markdown: str | None, since: str | None) -> None:
    """The latest verdict of every control (`control: <id>` flows) across run records."""
    from flowproof.cli.audit import audit_command

    audit_command(runs_dir, html, markdown, since)


@main.command("mcp")
@click.option(
    "--directory",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=str),
    metavar="DIR",
    help="Run from DIR (the project root): the tools' paths are relative to it "
    "(default: the directory the MCP client starts the server in).",
)
def mcp_command(directory: str | None) -> None:
    """Serve flowproof's tools to a coding agent over MCP (stdio): list, run and record specs,
    show and diff traces, run doctor; every result is JSON. Needs the `mcp` extra:
    pip install 'flowproof-cli[mcp]'."""
    from flowproof.cli.mcp import serve_command

    serve_command(directory)


@main.group()
def trace() -> None:
    """Work with traces."""


@trace.command("lint")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@_json_option
def trace_lint(paths: tuple[str, ...]) -> None:
    """Fail (exit 1) on what must never be committed in the traces under PATHS (default:
    specs/): provider keys, tokens, private keys, header-like keys, home paths, declared
    secrets, and traces no spec replays."""
    from flowproof.cli.trace_lint import lint_command

    lint_command(paths)


@main.command("help-matchers")
def help_matchers() -> None:
    """List the argument matchers `where` clauses accept."""
    from flowproof.assertions.docgen import render_matchers_help

    click.echo(render_matchers_help())


@main.group(cls=GuardedGroup)
def github() -> None:
    """GitHub helpers for the flowproof Action (flowproof run never needs them)."""


@github.command("comment")
@click.option(
    "--markdown",
    required=True,
    metavar="FILE",
    help="The comment's text: the markdown `flowproof run --markdown FILE` wrote.",
)
@click.option(
    "--marker",
    "marker_name",
    default="flowproof",
    show_default=True,
    metavar="NAME",
    help="Names the comment, so several jobs can keep one each.",
)
@click.option(
    "--pr",
    type=click.IntRange(min=1),
    default=None,
    help="The pull request (default: the one in $GITHUB_EVENT_PATH).",
)
@click.option("--repo", default=None, metavar="OWNER/NAME", help="Default: $GITHUB_REPOSITORY.")
@click.option(
    "--token",
    envvar="GITHUB_TOKEN",
    show_envvar=True,
    default=None,
    help="A token allowed to write pull-request comments.",
)
@click.option(
    "--update-only",
    is_flag=True,
    help="Edit the earlier comment if there is one; never create one.",
)
@click.option(
    "--author",
    envvar="FLOWPROOF_COMMENT_AUTHOR",
    show_envvar=True,
    default="github-actions[bot]",
    show_default=True,
    metavar="LOGIN",
    help="Who the token posts as, when GitHub will not say (a GitHub Actions or GitHub App "
    "token; a personal access token's user is asked for). Only that login's comments are "
    "edited.",
)
def github_comment(
    markdown: str,
    marker_name: str,
    pr: int | None,
    repo: str | None,
    token: str | None,
    update_only: bool,
    author: str,
) -> None:
    """Create, or edit in place, ONE comment on the pull request, through $GITHUB_API_URL.

    A 403 (a fork's read-only token) or an event that is not a pull request prints a notice
    and exits 0; any other failure exits 2. A comment carrying the marker that someone else
    wrote is never edited: it is named in the output and flowproof's own is created beside it.
    """
    from flowproof.cli.github import comment_command

    comment_command(markdown, marker_name, pr, repo, token, update_only, author)

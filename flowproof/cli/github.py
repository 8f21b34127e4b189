"""`flowproof github comment`: keep ONE sticky comment on the pull request up to date.

Exit 0 when the comment was created, edited, already up to date, or could not be posted for a
reason that is not the run's fault (not a pull request event; a 403, as a fork's pull request
gets a read-only token); 2 for anything else, in one line that never holds the token. A comment
carrying the marker that another login wrote is named on stderr and left alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from flowproof.cli.output import command, out
from flowproof.github.context import (
    GitHubError,
    api_base,
    comment_body,
    load_event,
    marker,
    pull_request_number,
    repository,
)
from flowproof.guards.redaction import REDACT
from flowproof.guards.workflow_commands import quoted

TOKEN_VARIABLE = "GITHUB_TOKEN"
FORK_HINT = (
    "a pull request from a fork gets a read-only token; the job summary and the report "
    "artifact still have the results (docs/action.md: fork pull requests)"
)


def comment_command(
    markdown: str,
    marker_name: str,
    pr: int | None,
    repo: str | None,
    token: str | None,
    update_only: bool,
    author: str,
) -> None:
    environ = os.environ
    if token:
        REDACT.hide(TOKEN_VARIABLE, token)  # whatever is printed from here on, never the token
    marker(marker_name)
    text = _read(markdown)
    number = pr if pr is not None else pull_request_number(load_event(_event_path()))
    if number is None:
        event = environ.get("GITHUB_EVENT_NAME") or "no GitHub event"
        notice(f"not a pull request ({event}); no comment posted")
        return
    if not token:
        raise GitHubError(
            f"no GitHub token: set {TOKEN_VARIABLE} (the action passes its github-token input) "
            "or give --token"
        )
    owner, name = repository(repo or environ.get("GITHUB_REPOSITORY"))
    from flowproof.github.comment import Action, Target, post_sticky

    target = Target(api_base(environ.get("GITHUB_API_URL")), owner, name, number)
    body = comment_body(text, marker_name)
    if not author.strip():
        raise GitHubError("--author: give the login the token posts as")
    result = post_sticky(
        target, token, body, marker_name, update_only=update_only, author=author.strip()
    )
    for planted in result.ignored:
        out(
            f"left alone a comment marked {marker(marker_name)} that {quoted(planted.login)} "
            f"wrote: flowproof edits only comments by {quoted(result.identity)}"
            + (f": {planted.url}" if planted.url else "")
        )
    where = f" {result.url}" if result.url else ""
    if result.action is Action.FORBIDDEN:
        notice(
            f"cannot comment on pull request #{number}: GitHub answered 403 "
            f"({result.detail}); {FORK_HINT}"
        )
    elif result.action is Action.NOTHING_TO_UPDATE:
        out(f"no earlier flowproof comment on pull request #{number}; none created")
    elif result.action is Action.UNCHANGED:
        out(f"the comment on pull request #{number} is already up to date:{where}")
    else:
        out(f"{result.action.value} the comment on pull request #{number}:{where}")


def notice(message: str) -> None:
    """A GitHub Actions notice (stdout, where the runner reads workflow commands) inside
    Actions; a plain line on stderr elsewhere."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        out(message)
        return
    command("notice", message, {"title": "flowproof"})


def _event_path() -> str | None:
    return os.environ.get("GITHUB_EVENT_PATH") or None


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise GitHubError(f"cannot read --markdown {path}: {reason}") from None

"""Where the sticky comment goes and what it says; pure, no IO but reading the event file.

The pull request comes from the standard Actions variables: GITHUB_REPOSITORY (`owner/name`),
GITHUB_EVENT_PATH (the event JSON; `pull_request.number`, or `issue.number` for a comment
event on a pull request), GITHUB_API_URL (github.com or a GitHub Enterprise server).
The comment is recognised by a hidden marker on its first line, so several jobs can keep one
comment each (`--marker`), and a reply quoting the comment (`> <!-- ...`) is never taken for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flowproof.core.errors import FlowproofError
from flowproof.report.markdown import open_fence

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_MARKER = "flowproof"
COMMENT_LIMIT = 65536
"""GitHub's limit on a comment body, in characters; the marker counts too."""
_MARKER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_CUT_NOTE = (
    "\n\n… (cut to fit GitHub's comment limit; the job summary and the report have it all)\n"
)


class GitHubError(FlowproofError):
    """The comment cannot be posted: a bad setting, or GitHub answered with an error other than
    403 (exit 2, one line, never the token)."""


def marker(name: str) -> str:
    """The hidden first line that marks flowproof's comment; `name` is letters, digits, `.`,
    `_` and `-`, so it can never close the HTML comment early."""
    if not _MARKER_NAME.fullmatch(name):
        raise GitHubError(
            f"--marker {name!r}: use letters, digits, '.', '_' and '-' (at most 100 characters)"
        )
    return f"<!-- flowproof-comment: {name} -->"


def comment_body(markdown: str, name: str) -> str:
    """The comment as posted: the marker line, then the markdown, cut to GitHub's limit."""
    head = marker(name) + "\n"
    if len(head) + len(markdown) <= COMMENT_LIMIT:
        return head + markdown
    room = COMMENT_LIMIT - len(head) - len(_CUT_NOTE)
    kept = markdown[:room]
    if "\n" in kept:
        kept = kept[: kept.rindex("\n")]  # cut at a line, not inside a word or a link
    left_open = open_fence(kept)
    if left_open:
        kept += "\n" + left_open  # close the code block the cut left open, with its own fence
    return head + kept + _CUT_NOTE


def is_ours(body: str | None, name: str) -> bool:
    """Whether a comment body carries this marker (its first line is the marker). Who wrote the
    comment is the other half of the test, decided in comment.py."""
    if not body:
        return False
    first = body.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r").strip()
    return first == marker(name)


def repository(value: str | None) -> tuple[str, str]:
    """`owner/name` from GITHUB_REPOSITORY or --repo."""
    if not value:
        raise GitHubError("no repository: GITHUB_REPOSITORY is not set (or pass --repo OWNER/NAME)")
    if not _REPO.fullmatch(value):
        raise GitHubError(f"repository {value!r} is not OWNER/NAME")
    owner, name = value.split("/")
    return owner, name


def load_event(path: str | None) -> Mapping[str, Any]:
    """The workflow's event JSON; empty when GITHUB_EVENT_PATH is unset (not in Actions)."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GitHubError(f"cannot read the event file GITHUB_EVENT_PATH={path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def pull_request_number(event: Mapping[str, Any]) -> int | None:
    """The pull request the event is about, or None (a push, a schedule, an issue)."""
    pull = event.get("pull_request")
    if isinstance(pull, dict) and _is_number(pull.get("number")):
        return int(pull["number"])
    issue = event.get("issue")  # issue_comment on a pull request
    if isinstance(issue, dict) and issue.get("pull_request") and _is_number(issue.get("number")):
        return int(issue["number"])
    return None


def api_base(value: str | None) -> str:
    base = (value or DEFAULT_API_URL).rstrip("/")
    if not base.startswith(("https://", "http://")):
        raise GitHubError(f"GITHUB_API_URL={base!r} is not an http(s) URL")
    return base


def _is_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0

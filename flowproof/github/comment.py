"""The sticky pull-request comment, through the GitHub REST API: flowproof's second network
client beside the record forwarder (proxy/forward.py), and the only one in this package.

It reads EVERY page of the pull request's comments (100 a page, following `Link: rel="next"`),
takes the first whose first line is the marker, and edits it in place; with none it creates one.
A 403 is an answer, not an error: a fork's pull request gets a read-only token, and the run's
job summary and report still say everything, so the caller prints a notice and exits 0.

The token goes out in the Authorization header and nowhere else: error messages carry the
method, the path and GitHub's own message, and a `next` link pointing off the API's origin is
refused rather than followed with the token.
"""

from __future__ import annotations

import asyncio
import enum
import json
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from flowproof import __version__
from flowproof.github.context import GitHubError, is_ours

PER_PAGE = 100
MAX_PAGES = 1000
"""A guard against a `next` link that never ends (100,000 comments is more than any PR has)."""
TIMEOUT = aiohttp.ClientTimeout(total=60)
_SHOWN = 300


class Action(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    """The earlier comment already says exactly this; it is left alone."""
    FORBIDDEN = "forbidden"
    """GitHub answered 403 (a fork's read-only token, or permissions not granted)."""
    NOTHING_TO_UPDATE = "nothing-to-update"
    """`update_only` and no earlier comment."""


@dataclass(frozen=True, slots=True)
class Target:
    """The pull request whose conversation holds the comment."""

    api: str
    """The REST API's base URL (GITHUB_API_URL), without a trailing slash."""
    owner: str
    repo: str
    number: int

    @property
    def comments_path(self) -> str:
        return f"/repos/{self.owner}/{self.repo}/issues/{self.number}/comments"

    def comment_path(self, comment_id: int) -> str:
        return f"/repos/{self.owner}/{self.repo}/issues/comments/{comment_id}"


@dataclass(frozen=True, slots=True)
class Result:
    action: Action
    url: str | None = None
    """The comment's address on github.com (html_url), when there is one."""
    detail: str = ""
    """GitHub's message, for a 403."""


class _Forbidden(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def post_sticky(
    target: Target, token: str, body: str, marker_name: str, *, update_only: bool = False
) -> Result:
    """Create or edit the one comment `marker_name` marks; `body` already carries the marker."""
    try:
        return asyncio.run(_post_sticky(target, token, body, marker_name, update_only))
    except _Forbidden as forbidden:
        return Result(Action.FORBIDDEN, detail=forbidden.detail)
    except (aiohttp.ClientError, TimeoutError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise GitHubError(f"cannot reach the GitHub API at {target.api}: {reason}") from None


async def _post_sticky(
    target: Target, token: str, body: str, marker_name: str, update_only: bool
) -> Result:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": f"flowproof/{__version__}",
    }
    # trust_env: a self-hosted runner reaches its GitHub through HTTPS_PROXY, as the runner does.
    async with aiohttp.ClientSession(headers=headers, timeout=TIMEOUT, trust_env=True) as session:
        earlier = await _find(session, target, marker_name)
        if earlier is not None:
            if earlier.get("body") == body:
                return Result(Action.UNCHANGED, _html_url(earlier))
            path = target.comment_path(int(earlier["id"]))
            edited = await _send(session, "PATCH", target.api, path, {"body": body}, 200)
            return Result(Action.UPDATED, _html_url(edited))
        if update_only:
            return Result(Action.NOTHING_TO_UPDATE)
        created = await _send(
            session, "POST", target.api, target.comments_path, {"body": body}, 201
        )
        return Result(Action.CREATED, _html_url(created))


async def _find(
    session: aiohttp.ClientSession, target: Target, marker_name: str
) -> dict[str, Any] | None:
    """The oldest comment the marker names, reading page after page until one is found."""
    origin = URL(target.api).origin()
    url: URL | None = URL(target.api + target.comments_path).with_query(per_page=PER_PAGE)
    seen: set[URL] = set()
    while url is not None and len(seen) < MAX_PAGES:
        seen.add(url)
        async with session.get(url) as response:
            page = await _json(response, "GET", target.comments_path, 200)
            if not isinstance(page, list):
                raise GitHubError(f"GET {target.comments_path}: GitHub did not answer a list")
            for comment in page:
                if isinstance(comment, dict) and is_ours(comment.get("body"), marker_name):
                    return comment
            following = response.links.get("next")
        url = URL(str(following["url"])) if following and "url" in following else None
        if url is not None and url.origin() != origin:
            raise GitHubError(
                f"GET {target.comments_path}: the next page is at {url.origin()}, not at the "
                f"API ({origin}); not following it with the token"
            )
        if url in seen:
            break
    return None


async def _send(
    session: aiohttp.ClientSession,
    method: str,
    api: str,
    path: str,
    payload: dict[str, str],
    expected: int,
) -> dict[str, Any]:
    async with session.request(method, api + path, json=payload) as response:
        answer = await _json(response, method, path, expected)
    if not isinstance(answer, dict) or "id" not in answer:
        raise GitHubError(f"{method} {path}: GitHub's answer has no comment in it")
    return answer


async def _json(response: aiohttp.ClientResponse, method: str, path: str, expected: int) -> Any:
    text = await response.text(errors="replace")
    if response.status == 403:
        raise _Forbidden(_message(text) or "403 Forbidden")
    if response.status != expected:
        why = _message(text) or response.reason or "no message"
        raise GitHubError(f"GitHub answered {response.status} to {method} {path}: {why}")
    try:
        return json.loads(text)
    except ValueError:
        raise GitHubError(f"{method} {path}: GitHub's answer is not JSON") from None


def _message(text: str) -> str:
    """GitHub's own `message`, on one line, clipped; the raw text when it is not JSON."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    found = data.get("message") if isinstance(data, dict) else text
    one_line = " ".join(str(found or "").split())
    return one_line if len(one_line) <= _SHOWN else one_line[:_SHOWN] + "…"


def _html_url(comment: dict[str, Any]) -> str | None:
    url = comment.get("html_url")
    return url if isinstance(url, str) else None

"""The sticky pull-request comment, through the GitHub REST API: flowproof's second network
client beside the record forwarder (proxy/forward.py), and the only one in this package.

It reads EVERY page of the pull request's comments (100 a page, following `Link: rel="next"`),
takes the first whose first line is the marker AND that the token's own identity wrote, and
edits it in place; with none it creates one. Anyone can write the marker into a comment of
their own: editing such a comment would put flowproof's results under their name (where they
can change them), or meet a 403 that reads like a fork's read-only token and post nothing. So a
marked comment by anyone else is left alone and reported in `Result.ignored`.

Whose comments are ours: the login `GET /user` names, which answers for a personal access
token; a GitHub Actions token (or a GitHub App's) gets a 403 there, and then it is the login
given as `author`, by default `github-actions[bot]`, the identity GITHUB_TOKEN posts as. The
identity is asked for only once a marked comment turns up, so a first run costs no request.

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
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from flowproof._version import __version__
from flowproof.github.context import GitHubError, is_ours

PER_PAGE = 100
MAX_PAGES = 1000
"""A guard against a `next` link that never ends (100,000 comments is more than any PR has)."""
TIMEOUT = aiohttp.ClientTimeout(total=60)
ACTIONS_BOT = "github-actions[bot]"
"""The login GitHub Actions' GITHUB_TOKEN posts comments as."""
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
class Planted:
    """A comment that carries the marker but was written by someone else: never edited."""

    login: str
    """Its author's login, as GitHub gives it."""
    url: str | None
    """Its address on github.com."""


@dataclass(frozen=True, slots=True)
class Result:
    action: Action
    url: str | None = None
    """The comment's address on github.com (html_url), when there is one."""
    detail: str = ""
    """GitHub's message, for a 403."""
    identity: str = ""
    """The login taken as the token's own, when a marked comment made it matter."""
    ignored: tuple[Planted, ...] = ()
    """Marked comments read before ours (or all of them, when none is ours), other people's."""


@dataclass(slots=True)
class _Search:
    """What the pages of comments said: ours (the oldest by us), and others' marked ones."""

    ours: dict[str, Any] | None = None
    identity: str = ""
    ignored: list[Planted] = field(default_factory=list)

    def result(self, action: Action, comment: dict[str, Any] | None = None) -> Result:
        url = _html_url(comment) if comment is not None else None
        return Result(action, url, identity=self.identity, ignored=tuple(self.ignored))


class _Forbidden(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def post_sticky(
    target: Target,
    token: str,
    body: str,
    marker_name: str,
    *,
    update_only: bool = False,
    author: str = ACTIONS_BOT,
) -> Result:
    """Create or edit the one comment `marker_name` marks that the token's identity wrote;
    `body` already carries the marker. `author` is that identity when GET /user cannot say
    (a GitHub Actions or GitHub App token)."""
    try:
        return asyncio.run(_post_sticky(target, token, body, marker_name, update_only, author))
    except _Forbidden as forbidden:
        return Result(Action.FORBIDDEN, detail=forbidden.detail)
    except (aiohttp.ClientError, TimeoutError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise GitHubError(f"cannot reach the GitHub API at {target.api}: {reason}") from None


async def _post_sticky(
    target: Target, token: str, body: str, marker_name: str, update_only: bool, author: str
) -> Result:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": f"flowproof/{__version__}",
    }
    # trust_env: a self-hosted runner reaches its GitHub through HTTPS_PROXY, as the runner does.
    async with aiohttp.ClientSession(headers=headers, timeout=TIMEOUT, trust_env=True) as session:
        found = await _find(session, target, marker_name, author)
        earlier = found.ours
        if earlier is not None:
            if earlier.get("body") == body:
                return found.result(Action.UNCHANGED, earlier)
            path = target.comment_path(int(earlier["id"]))
            edited = await _send(session, "PATCH", target.api, path, {"body": body}, 200)
            return found.result(Action.UPDATED, edited)
        if update_only:
            return found.result(Action.NOTHING_TO_UPDATE)
        created = await _send(
            session, "POST", target.api, target.comments_path, {"body": body}, 201
        )
        return found.result(Action.CREATED, created)


async def _find(
    session: aiohttp.ClientSession, target: Target, marker_name: str, author: str
) -> _Search:
    """The oldest marked comment the token's identity wrote, reading page after page until one
    is found, and the marked comments of others read on the way."""
    search = _Search()
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
                if not isinstance(comment, dict) or not is_ours(comment.get("body"), marker_name):
                    continue
                search.identity = search.identity or await _identity(session, target, author)
                login = _login(comment)
                if login == search.identity:
                    search.ours = comment
                    return search
                search.ignored.append(Planted(login, _html_url(comment)))
            following = response.links.get("next")
        url = URL(str(following["url"])) if following and "url" in following else None
        if url is not None and url.origin() != origin:
            raise GitHubError(
                f"GET {target.comments_path}: the next page is at {url.origin()}, not at the "
                f"API ({origin}); not following it with the token"
            )
        if url in seen:
            break
    return search


async def _identity(session: aiohttp.ClientSession, target: Target, author: str) -> str:
    """The login the token posts as: GET /user's for a personal access token; `author` when
    GitHub refuses to say (403 for a GitHub Actions or GitHub App token, which is no user)."""
    async with session.get(target.api + "/user") as response:
        if response.status in (401, 403, 404):
            return author
        user = await _json(response, "GET", "/user", 200)
    login = user.get("login") if isinstance(user, dict) else None
    if not isinstance(login, str) or not login:
        raise GitHubError("GET /user: GitHub's answer names no login")
    return login


def _login(comment: dict[str, Any]) -> str:
    """The login of a comment's author; "" when GitHub gives none (a deleted user: a ghost
    can never be us)."""
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else ""


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

"""A loopback fake of the part of the GitHub REST API the sticky comment uses.

    GET   /repos/{owner}/{repo}/issues/{n}/comments?per_page=&page=   Link-paginated
    POST  /repos/{owner}/{repo}/issues/{n}/comments                   201 + the comment
    PATCH /repos/{owner}/{repo}/issues/comments/{id}                  200 + the comment
    GET   /user                                                       the token's user, or 403

It checks the Bearer token on every request, keeps a log of what was asked, and can be told
to answer 403 (a fork's read-only token) for writes, or for everything. Every comment has an
author (`user.login`): a comment the token creates is written by `poster`, which is the token's
user when it is a personal access token (`user_login`), and `github-actions[bot]` otherwise;
`GET /user` answers 403 for such a token, as GitHub does for GITHUB_TOKEN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.loopback import ThreadedApp

TOKEN = "ghs_fake-token-0123456789abcdef"
OWNER, REPO = "acme", "agents"
FORBIDDEN = {"message": "Resource not accessible by integration", "status": "403"}
ACTIONS_BOT = "github-actions[bot]"


@dataclass
class FakeGitHub:
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """The comments of each pull request, oldest first."""
    forbid_writes: bool = False
    forbid_all: bool = False
    default_per_page: int = 30
    user_login: str | None = None
    """The user a personal access token belongs to; None for a GitHub Actions token."""
    log: list[tuple[str, str]] = field(default_factory=list)
    """(method, path with query) of every request."""
    port: int = 0
    _next_id: int = 1000

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def poster(self) -> str:
        """Who the token's comments are written by."""
        return self.user_login or ACTIONS_BOT

    def add(self, number: int, body: str, login: str = "someone") -> dict[str, Any]:
        self._next_id += 1
        comment = {
            "id": self._next_id,
            "body": body,
            "user": {"login": login},
            "html_url": f"https://github.com/{OWNER}/{REPO}/pull/{number}#issuecomment-{self._next_id}",
        }
        self.comments.setdefault(number, []).append(comment)
        return comment

    # -- the API -------------------------------------------------------------------------------

    async def _list(self, request: web.Request) -> web.StreamResponse:
        denied = self._check(request, write=False)
        if denied:
            return denied
        number = int(request.match_info["number"])
        per_page = int(request.query.get("per_page", self.default_per_page))
        page = int(request.query.get("page", "1"))
        everything = self.comments.get(number, [])
        chunk = everything[(page - 1) * per_page : page * per_page]
        headers = {}
        last = max(1, -(-len(everything) // per_page))
        if page < last:
            base = f"{self.url}{request.path}"
            headers["Link"] = (
                f'<{base}?per_page={per_page}&page={page + 1}>; rel="next", '
                f'<{base}?per_page={per_page}&page={last}>; rel="last"'
            )
        return web.json_response(chunk, headers=headers)

    async def _create(self, request: web.Request) -> web.StreamResponse:
        denied = self._check(request, write=True)
        if denied:
            return denied
        body = (await request.json())["body"]
        comment = self.add(int(request.match_info["number"]), body, login=self.poster)
        return web.json_response(comment, status=201)

    async def _edit(self, request: web.Request) -> web.StreamResponse:
        denied = self._check(request, write=True)
        if denied:
            return denied
        wanted = int(request.match_info["id"])
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == wanted:
                    comment["body"] = (await request.json())["body"]
                    return web.json_response(comment)
        return web.json_response({"message": "Not Found"}, status=404)

    async def _user(self, request: web.Request) -> web.StreamResponse:
        denied = self._check(request, write=False)
        if denied:
            return denied
        if self.user_login is None:  # an installation token is no user
            return web.json_response(FORBIDDEN, status=403)
        return web.json_response({"login": self.user_login, "type": "User"})

    def _check(self, request: web.Request, *, write: bool) -> web.StreamResponse | None:
        self.log.append((request.method, request.path_qs))
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"message": "Bad credentials"}, status=401)
        if request.path == "/user":
            return None
        if request.match_info.get("owner") != OWNER or request.match_info.get("repo") != REPO:
            return web.json_response({"message": "Not Found"}, status=404)
        if self.forbid_all or (write and self.forbid_writes):
            return web.json_response(FORBIDDEN, status=403)
        return None

    # -- serving -------------------------------------------------------------------------------

    def start(self) -> None:
        def routes(app: web.Application) -> None:
            comments = "/repos/{owner}/{repo}/issues/{number:\\d+}/comments"
            app.router.add_get(comments, self._list)
            app.router.add_post(comments, self._create)
            app.router.add_patch("/repos/{owner}/{repo}/issues/comments/{id:\\d+}", self._edit)
            app.router.add_get("/user", self._user)

        self._server = ThreadedApp("fake-github", routes)
        self.port = self._server.start()

    def stop(self) -> None:
        self._server.stop()

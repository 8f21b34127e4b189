"""`flowproof github comment` against a loopback fake of the GitHub REST API, through the real
CLI in a subprocess: create, edit in place, the marker three pages in, a 403 tolerated, and a
marked comment someone else wrote never edited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action.fake_github import OWNER, REPO, TOKEN, FakeGitHub
from tests.conftest import CliResult, flowproof

PR = 7
MARKER_LINE = "<!-- flowproof-comment: flowproof -->"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    yield fake
    fake.stop()


def comment(
    tmp_path: Path,
    github: FakeGitHub,
    text: str = "### flowproof: 1 passed\n",
    *args: str,
    event: dict[str, object] | None = None,
    **env: str,
) -> CliResult:
    markdown = tmp_path / "comment.md"
    markdown.write_text(text, encoding="utf-8")
    event_path = tmp_path / "event.json"
    event_path.write_text(
        json.dumps(event if event is not None else {"pull_request": {"number": PR}}),
        encoding="utf-8",
    )
    environ = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": github.url,
        "GITHUB_REPOSITORY": f"{OWNER}/{REPO}",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_TOKEN": TOKEN,
        **env,
    }
    result = flowproof(
        "github", "comment", "--markdown", str(markdown), *args, cwd=tmp_path, env=environ
    )
    assert TOKEN not in result.output
    return result


def methods(github: FakeGitHub) -> list[str]:
    return [method for method, _ in github.log]


def test_creates_the_comment_then_edits_it_in_place(tmp_path: Path, github: FakeGitHub) -> None:
    github.add(PR, "LGTM")
    first = comment(tmp_path, github, "### flowproof: 1 failed\n")
    assert first.code == 0, first.output
    assert (
        "created the comment on pull request #7: https://github.com/acme/agents/pull/7#issuecomment-1002"
        in first.stderr
    )
    assert methods(github) == ["GET", "POST"]
    assert github.log[0][1] == "/repos/acme/agents/issues/7/comments?per_page=100"

    second = comment(tmp_path, github, "### flowproof: 1 passed\n")
    assert second.code == 0, second.output
    assert "updated the comment on pull request #7" in second.stderr
    assert [path for _, path in github.log[2:4]] == [
        "/repos/acme/agents/issues/7/comments?per_page=100",
        "/user",  # asked once a marked comment turned up: 403, so it is the Actions bot's
    ]
    assert methods(github) == ["GET", "POST", "GET", "GET", "PATCH"]
    ours = [c for c in github.comments[PR] if c["body"].startswith(MARKER_LINE)]
    assert len(github.comments[PR]) == 2 and len(ours) == 1
    assert ours[0]["body"] == MARKER_LINE + "\n### flowproof: 1 passed\n"


def test_an_unchanged_comment_is_left_alone(tmp_path: Path, github: FakeGitHub) -> None:
    github.add(PR, MARKER_LINE + "\nsame\n", login="github-actions[bot]")
    result = comment(tmp_path, github, "same\n")
    assert result.code == 0, result.output
    assert "already up to date" in result.stderr
    assert methods(github) == ["GET", "GET"]


def test_the_marker_is_found_on_page_three(tmp_path: Path, github: FakeGitHub) -> None:
    for n in range(230):
        github.add(PR, f"review comment {n}")
    ours = github.add(PR, MARKER_LINE + "\nold results\n", login="github-actions[bot]")
    for n in range(20):
        github.add(PR, f"later comment {n}")
    result = comment(tmp_path, github, "new results\n")
    assert result.code == 0, result.output
    assert [path for _, path in github.log] == [
        "/repos/acme/agents/issues/7/comments?per_page=100",
        "/repos/acme/agents/issues/7/comments?per_page=100&page=2",
        "/repos/acme/agents/issues/7/comments?per_page=100&page=3",
        "/user",
        f"/repos/acme/agents/issues/comments/{ours['id']}",
    ]
    assert methods(github)[-1] == "PATCH"
    assert len(github.comments[PR]) == 251
    assert ours["body"] == MARKER_LINE + "\nnew results\n"


def test_a_quoted_marker_is_not_the_comment(tmp_path: Path, github: FakeGitHub) -> None:
    github.add(PR, "> " + MARKER_LINE + "\n> old results\n\nwhy did this fail?")
    result = comment(tmp_path, github)
    assert result.code == 0, result.output
    assert methods(github) == ["GET", "POST"]


def test_each_marker_keeps_its_own_comment(tmp_path: Path, github: FakeGitHub) -> None:
    assert comment(tmp_path, github, "linux\n", "--marker", "linux").code == 0
    assert comment(tmp_path, github, "macos\n", "--marker", "macos").code == 0
    assert comment(tmp_path, github, "linux again\n", "--marker", "linux").code == 0
    assert [c["body"] for c in github.comments[PR]] == [
        "<!-- flowproof-comment: linux -->\nlinux again\n",
        "<!-- flowproof-comment: macos -->\nmacos\n",
    ]


def test_a_403_on_the_write_is_a_notice_and_exit_0(tmp_path: Path, github: FakeGitHub) -> None:
    github.forbid_writes = True
    result = comment(tmp_path, github)
    assert result.code == 0, result.output
    assert result.stdout.startswith(
        "::notice title=flowproof::cannot comment on pull request #7: GitHub answered 403 "
        "(Resource not accessible by integration); a pull request from a fork gets a "
        "read-only token"
    )
    assert github.comments.get(PR, []) == []


def test_a_403_on_the_read_is_tolerated_too(tmp_path: Path, github: FakeGitHub) -> None:
    github.forbid_all = True
    result = comment(tmp_path, github)
    assert result.code == 0, result.output
    assert "GitHub answered 403" in result.stdout
    assert methods(github) == ["GET"]


def test_update_only_never_creates(tmp_path: Path, github: FakeGitHub) -> None:
    result = comment(tmp_path, github, "all green\n", "--update-only")
    assert result.code == 0, result.output
    assert "no earlier flowproof comment on pull request #7; none created" in result.stderr
    assert methods(github) == ["GET"]
    github.add(PR, MARKER_LINE + "\nred\n", login="github-actions[bot]")
    assert comment(tmp_path, github, "all green\n", "--update-only").code == 0
    assert github.comments[PR][0]["body"] == MARKER_LINE + "\nall green\n"


def test_outside_a_pull_request_it_says_so_and_exits_0(tmp_path: Path, github: FakeGitHub) -> None:
    result = comment(tmp_path, github, event={"ref": "refs/heads/main"}, GITHUB_EVENT_NAME="push")
    assert result.code == 0, result.output
    assert (
        result.stdout == "::notice title=flowproof::not a pull request (push); no comment posted\n"
    )
    assert github.log == []


def test_the_pr_can_be_named(tmp_path: Path, github: FakeGitHub) -> None:
    result = comment(tmp_path, github, "x\n", "--pr", "12", event={})
    assert result.code == 0, result.output
    assert list(github.comments) == [12]


def test_other_errors_exit_2_in_one_line(tmp_path: Path, github: FakeGitHub) -> None:
    result = comment(tmp_path, github, GITHUB_REPOSITORY="acme/nope")
    assert result.code == 2
    assert result.stderr == (
        "error: GitHub answered 404 to GET /repos/acme/nope/issues/7/comments: Not Found\n"
    )
    bad = comment(tmp_path, github, GITHUB_TOKEN="ghs_wrong-token-xyz")
    assert bad.code == 2
    assert bad.stderr == (
        "error: GitHub answered 401 to GET /repos/acme/agents/issues/7/comments: Bad credentials\n"
    )
    assert "ghs_wrong-token-xyz" not in bad.output


def test_an_unreachable_api_exits_2(tmp_path: Path, github: FakeGitHub) -> None:
    github.stop()
    result = comment(tmp_path, github, GITHUB_API_URL="http://127.0.0.1:9")
    assert result.code == 2
    assert result.stderr.startswith("error: cannot reach the GitHub API at http://127.0.0.1:9: ")
    assert len(result.stderr.splitlines()) == 1


def test_no_token_exits_2(tmp_path: Path, github: FakeGitHub) -> None:
    result = comment(tmp_path, github, GITHUB_TOKEN="")
    assert result.code == 2
    assert result.stderr == (
        "error: no GitHub token: set GITHUB_TOKEN (the action passes its github-token input) "
        "or give --token\n"
    )
    assert github.log == []


def test_a_marker_that_could_close_the_html_comment_is_refused(
    tmp_path: Path, github: FakeGitHub
) -> None:
    result = comment(tmp_path, github, "x\n", "--marker", "a -->")
    assert result.code == 2
    assert "--marker 'a -->': use letters, digits" in result.stderr
    assert github.log == []


def test_a_marked_comment_by_someone_else_is_never_edited(
    tmp_path: Path, github: FakeGitHub
) -> None:
    planted = github.add(PR, MARKER_LINE + "\nall green, trust me\n", login="mallory")
    result = comment(tmp_path, github, "### flowproof: 1 failed\n")
    assert result.code == 0, result.output
    assert planted["body"] == MARKER_LINE + "\nall green, trust me\n"
    assert methods(github) == ["GET", "GET", "POST"]
    assert [(c["user"]["login"], c["body"]) for c in github.comments[PR]] == [
        ("mallory", MARKER_LINE + "\nall green, trust me\n"),
        ("github-actions[bot]", MARKER_LINE + "\n### flowproof: 1 failed\n"),
    ]
    assert result.stderr.splitlines() == [
        f"left alone a comment marked {MARKER_LINE} that mallory wrote: flowproof edits only "
        f"comments by github-actions[bot]: {planted['html_url']}",
        "created the comment on pull request #7: "
        "https://github.com/acme/agents/pull/7#issuecomment-1002",
    ]

    again = comment(tmp_path, github, "### flowproof: 1 passed\n")
    assert again.code == 0, again.output
    assert "updated the comment on pull request #7" in again.stderr
    assert "left alone a comment marked" in again.stderr  # read before ours, so named again
    assert planted["body"] == MARKER_LINE + "\nall green, trust me\n"
    assert github.comments[PR][1]["body"] == MARKER_LINE + "\n### flowproof: 1 passed\n"


def test_update_only_with_only_a_planted_comment_creates_nothing(
    tmp_path: Path, github: FakeGitHub
) -> None:
    github.add(PR, MARKER_LINE + "\nplanted\n", login="mallory")
    result = comment(tmp_path, github, "all green\n", "--update-only")
    assert result.code == 0, result.output
    assert "that mallory wrote" in result.stderr
    assert "no earlier flowproof comment on pull request #7; none created" in result.stderr
    assert methods(github) == ["GET", "GET"]
    assert [c["body"] for c in github.comments[PR]] == [MARKER_LINE + "\nplanted\n"]


def test_a_personal_token_edits_its_users_comment_only(tmp_path: Path, github: FakeGitHub) -> None:
    github.user_login = "alice"
    bots = github.add(PR, MARKER_LINE + "\nby the bot\n", login="github-actions[bot]")
    alices = github.add(PR, MARKER_LINE + "\nby alice\n", login="alice")
    result = comment(tmp_path, github, "new\n")
    assert result.code == 0, result.output
    assert bots["body"] == MARKER_LINE + "\nby the bot\n"
    assert alices["body"] == MARKER_LINE + "\nnew\n"
    assert "that github-actions[bot] wrote: flowproof edits only comments by alice" in (
        result.stderr
    )
    assert methods(github) == ["GET", "GET", "PATCH"]


def test_an_app_token_names_its_bot_with_author(tmp_path: Path, github: FakeGitHub) -> None:
    apps = github.add(PR, MARKER_LINE + "\nold\n", login="acme-ci[bot]")
    result = comment(tmp_path, github, "new\n", "--author", "acme-ci[bot]")
    assert result.code == 0, result.output
    assert apps["body"] == MARKER_LINE + "\nnew\n"
    assert methods(github) == ["GET", "GET", "PATCH"]

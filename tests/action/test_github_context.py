"""The pure half of the sticky comment (flowproof/github/context.py), and the lint rule that
keeps its HTTP client in one module."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flowproof.github.context import (
    COMMENT_LIMIT,
    GitHubError,
    comment_body,
    is_ours,
    marker,
    pull_request_number,
    repository,
)
from tests.conftest import ROOT


def test_the_body_starts_with_the_marker() -> None:
    assert comment_body("hello\n", "linux") == "<!-- flowproof-comment: linux -->\nhello\n"
    assert is_ours(comment_body("hello\n", "linux"), "linux")
    assert not is_ours(comment_body("hello\n", "linux"), "macos")
    assert not is_ours("> <!-- flowproof-comment: linux -->\n", "linux")
    assert not is_ours(None, "linux")


def test_a_long_body_is_cut_at_a_line_with_its_fence_closed() -> None:
    markdown = "```\n" + "x" * 70 + "\n" + ("y" * 99 + "\n") * 1000
    body = comment_body(markdown, "flowproof")
    assert len(body) <= COMMENT_LIMIT
    assert body.count("```") % 2 == 0
    assert body.endswith("the job summary and the report have it all)\n")


@pytest.mark.parametrize("name", ["", "a -->", "x" * 101, "-x", "a b"])
def test_a_marker_name_is_plain(name: str) -> None:
    with pytest.raises(GitHubError, match="use letters, digits"):
        marker(name)


@pytest.mark.parametrize(
    ("event", "number"),
    [
        ({"pull_request": {"number": 12}}, 12),
        ({"issue": {"number": 5, "pull_request": {"url": "x"}}}, 5),
        ({"issue": {"number": 5}}, None),
        ({"pull_request": {"number": True}}, None),
        ({"ref": "refs/heads/main"}, None),
    ],
)
def test_the_pull_request_comes_from_the_event(
    event: dict[str, object], number: int | None
) -> None:
    assert pull_request_number(event) == number


def test_the_repository_is_owner_slash_name() -> None:
    assert repository("acme/agents") == ("acme", "agents")
    with pytest.raises(GitHubError, match="is not OWNER/NAME"):
        repository("acme/agents/../x")


@pytest.mark.parametrize(
    ("module", "allowed"),
    [("flowproof/github/comment.py", True), ("flowproof/cli/github.py", False)],
)
def test_only_the_comment_module_may_open_a_client(module: str, allowed: bool) -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    done = subprocess.run(
        [ruff, "check", "--stdin-filename", module, "-"],
        input="from aiohttp import ClientSession\n\nprint(ClientSession)\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (done.returncode == 0) is allowed, done.stdout


@pytest.mark.parametrize("opening", ["````", "``````", "``````text"])
def test_a_cut_closes_a_long_fence_with_its_own_fence(opening: str) -> None:
    """A fence of four or six backticks exists to hold shorter runs: the "```" lines inside
    are content, and only a fence at least as long closes the block."""
    ticks = opening.removesuffix("text")
    markdown = f"{opening}\n```\ninside\n```\n" + ("y" * 99 + "\n") * 1000
    body = comment_body(markdown, "flowproof")
    assert len(body) <= COMMENT_LIMIT
    kept = body[: body.rindex("\n\n… (cut to fit")]
    assert kept.endswith("\n" + "y" * 99 + "\n" + ticks), kept[-200:]

"""report/markdown.py: which code block a cut leaves open, read as CommonMark reads fences."""

from __future__ import annotations

import pytest

from flowproof.report.markdown import fence, open_fence


@pytest.mark.parametrize(
    ("text", "left_open"),
    [
        ("no fence at all\n", None),
        ("```\ncode\n```\n", None),
        ("```text\ncode\n", "```"),
        ("``````\n```\ninside\n```\n", "``````"),  # shorter runs are content
        ("``````\n```\n``````\n", None),
        ("````\nx\n``````  \n", None),  # a longer closing fence, blanks after, closes it
        ("````\nx\n```` not a close\n", "````"),  # a closing fence holds nothing after it
        ("~~~~\n```\n", "~~~~"),  # backticks never close a tilde block
        ("``` a`b\nnot code\n", None),  # a backtick in the info string: not a fence
        ("   ```\nindented up to three\n", "```"),
    ],
)
def test_open_fence_reads_fences_as_commonmark_does(text: str, left_open: str | None) -> None:
    assert open_fence(text) == left_open


@pytest.mark.parametrize("content", ["plain", "```\nx\n```", "``````", "a\n`````b"])
def test_a_fenced_block_is_closed_only_by_its_own_last_line(content: str) -> None:
    block = fence(content)
    opening = block.split("\n", 1)[0].removesuffix("text")
    assert open_fence(block) is None
    assert open_fence(block.rsplit("\n", 1)[0]) == opening

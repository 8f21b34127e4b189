"""Golden-file comparison shared by the grammar, divergence and report tests."""

from __future__ import annotations

import difflib
import os

REGENERATE = os.environ.get("FLOWPROOF_REGENERATE_GOLDEN") == "1"
"""FLOWPROOF_REGENERATE_GOLDEN=1 makes golden tests rewrite their files from the code. Read at
import: the autouse clean_environ fixture strips FLOWPROOF_* before each test runs."""


def assert_same_text(expected: str, actual: str, *, source: str, problem: str) -> None:
    """Fail with `problem` and a unified diff (`source` named as the expected side)."""
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"{source} (expected)",
            tofile="rendered",
        )
    )
    assert actual == expected, f"{problem}:\n{diff}"

"""docs/falsifiability.md lists every check with a test where it fails: the table must cover
the step-kind and matcher registries, and every test it cites must exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from flowproof.assertions.kinds import step_kinds
from flowproof.assertions.matchers import registry

ROOT = Path(__file__).resolve().parents[2]
TABLE = (ROOT / "docs" / "falsifiability.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| (?P<check>[^|]+?) \| `(?P<test>[^`]+)` \|$", re.MULTILINE)
ROWS = [(m["check"], m["test"]) for m in ROW.finditer(TABLE)]


def test_the_table_has_rows() -> None:
    assert len(ROWS) >= 30


def test_every_step_kind_has_a_row() -> None:
    checks = " ".join(check for check, _ in ROWS)
    missing = [kind.name for kind in step_kinds() if f"step `{kind.name}`" not in checks]
    assert not missing, f"add a row to docs/falsifiability.md for the step kinds {missing}"


def test_every_matcher_has_a_row() -> None:
    checks = " ".join(check for check, _ in ROWS)
    missing = [m.name for m in registry() if f"matcher `{m.name}`" not in checks]
    assert not missing, f"add a row to docs/falsifiability.md for the matchers {missing}"


def test_every_cited_test_exists() -> None:
    missing = []
    for check, cited in ROWS:
        path, _, name = cited.partition("::")
        file = ROOT / path
        defined = (
            {
                n.name
                for n in ast.walk(ast.parse(file.read_text()))
                if isinstance(n, ast.FunctionDef)
            }
            if file.is_file()
            else set()
        )
        if name not in defined:
            missing.append(f"{check}: {cited}")
    assert not missing, "docs/falsifiability.md cites tests that do not exist:\n" + "\n".join(
        missing
    )


def test_the_check_itself_can_fail() -> None:
    """A step kind without a row is caught: the row test's own rule, applied to a table
    missing one."""
    checks = " ".join(check for check, _ in ROWS if "assert_no_secret_leak" not in check)
    assert "step `assert_no_secret_leak`" not in checks

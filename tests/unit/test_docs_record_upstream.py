"""docs/specs.md states record's upstream, key variables and auth header per dialect, from the
dialects themselves, and the README's record step names the OpenAI and Anthropic headers."""

from __future__ import annotations

import pytest

from flowproof.dialects.base import Dialect, every_dialect
from flowproof.guards.redaction import SHARED_KEY_VARIABLES
from tests.conftest import ROOT


def recording_section() -> str:
    page = (ROOT / "docs" / "specs.md").read_text()
    return page.split("## Recording: upstream and key", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("dialect", every_dialect(), ids=lambda d: d.name)
def test_each_dialect_has_a_row_naming_its_upstream_key_and_header(dialect: Dialect) -> None:
    rows = [
        line
        for line in recording_section().splitlines()
        if line.startswith("| ") and f"`{dialect.upstream_variable}`" in line
    ]
    assert len(rows) == 1, f"no one row names {dialect.upstream_variable}"
    (row,) = rows
    (header,) = dialect.auth_headers("k")
    assert f"`{header}: " in row
    for variable in dialect.key_variables or SHARED_KEY_VARIABLES:
        assert f"`{variable}`" in row
    if dialect.default_upstream:
        assert f"`{dialect.default_upstream}`" in row


def test_the_readme_record_step_names_each_headers_api() -> None:
    readme = (ROOT / "README.md").read_text()
    step = readme.split("2. **Record it once**", 1)[1].split("3. **Replay it", 1)[0]
    for named in ("`Authorization: Bearer` for OpenAI", "`x-api-key` for", "ANTHROPIC_BASE_URL"):
        assert named in step

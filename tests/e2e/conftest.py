"""End-to-end fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream


@pytest.fixture
def recorded(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    """A project whose booking flow has been recorded; the upstream is stopped afterwards."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path)
    result = record(tmp_path, upstream)
    assert result.code == 0, result.output
    upstream.stop()
    return tmp_path

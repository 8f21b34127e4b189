"""write_text_atomic: the previous file survives, and an unwritable path is a ConfigError."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowproof.core.errors import ConfigError
from flowproof.core.files import write_text_atomic


def test_writes_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "out.json"
    write_text_atomic(path, "one")
    write_text_atomic(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["out.json"]


def test_a_parent_that_is_a_file_names_the_path(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file")
    with pytest.raises(ConfigError) as caught:
        write_text_atomic(tmp_path / "taken" / "out.json", "x")
    assert str(caught.value) == (
        f"cannot write {tmp_path}/taken/out.json: its directory {tmp_path}/taken cannot be "
        "created (a file is in the way); any previous out.json is unchanged"
    )


def test_a_directory_where_the_file_should_be(tmp_path: Path) -> None:
    (tmp_path / "out.json").mkdir()
    with pytest.raises(ConfigError) as caught:
        write_text_atomic(tmp_path / "out.json", "x")
    assert str(caught.value) == (
        f"cannot write {tmp_path}/out.json: it cannot be replaced (Is a directory); any "
        "previous out.json is unchanged"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left

"""installer/build.py packs the onedir bundle reproducibly and lists it in SHA256SUMS."""

from __future__ import annotations

import hashlib
import re
import tarfile
from pathlib import Path

import pytest

from installer import build
from tests.installer.release import fake_bundle


def test_the_target_uses_the_npm_vocabulary() -> None:
    assert re.fullmatch(
        r"(linux-(x64|arm64)-(gnu|musl))|((darwin|win32)-(x64|arm64))", build.host_target()
    )


def test_the_archive_holds_the_bundle_under_flowproof_with_fixed_owners_and_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    bundle = fake_bundle(tmp_path / "build", "0.1.0")
    path = build.archive(bundle, tmp_path / "out", target="linux-x64-gnu", release_version="0.1.0")
    assert path.name == "flowproof-0.1.0-linux-x64-gnu.tar.gz"
    with tarfile.open(path) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == [
        "flowproof",
        "flowproof/LICENSE",
        "flowproof/_internal",
        "flowproof/_internal/base_library.zip",
        "flowproof/flowproof",
    ]
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {
        (0, 0, "", "", 1700000000)
    }
    assert members[-1].mode & 0o111 == 0o111
    with tarfile.open(path) as tar:
        licence = tar.extractfile("flowproof/LICENSE")
        assert licence is not None
        assert licence.read() == (build.ROOT / "LICENSE").read_bytes()


def test_two_archives_of_one_bundle_are_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    bundle = fake_bundle(tmp_path / "build", "0.1.0")
    first = build.archive(bundle, tmp_path / "a", target="linux-x64-gnu").read_bytes()
    second = build.archive(bundle, tmp_path / "b", target="linux-x64-gnu").read_bytes()
    assert first == second


def test_sha256sums_lists_every_archive_sorted_in_sha256sum_format(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path / "build", "0.1.0")
    out = tmp_path / "release"
    for target in ("linux-x64-gnu", "darwin-arm64"):
        build.archive(bundle, out, target=target, release_version="0.1.0")
    (out / "notes.txt").write_text("not an archive")
    lines = (out / "SHA256SUMS").read_text().splitlines()
    names = ["flowproof-0.1.0-darwin-arm64.tar.gz", "flowproof-0.1.0-linux-x64-gnu.tar.gz"]
    assert lines == [f"{hashlib.sha256((out / n).read_bytes()).hexdigest()}  {n}" for n in names]


def test_archiving_without_a_bundle_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"is missing; run `make freeze` first"):
        build.archive(tmp_path / "nothing", tmp_path / "out")

"""The release gate reads the highest GLIBC_x.y a bundle's ELF files need and fails above the
floor; it fails closed when it cannot read them."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

GATE = ROOT / "installer" / "glibc_gate.py"
SYSTEM_ELF = Path("/bin/true")  # needs GLIBC_2.34 on Debian 12; a real, small ELF everywhere

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("objdump") is None or not SYSTEM_ELF.is_file(),
    reason="the glibc gate reads Linux ELF files with objdump (binutils)",
)


def gate(bundle: Path, floor: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = None if path is None else {"PATH": path}
    return subprocess.run(
        [sys.executable, str(GATE), "--max", floor, str(bundle)],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A fake onedir: one real ELF under _internal/, a text file, a symlink to the ELF."""
    root = tmp_path / "flowproof"
    (root / "_internal").mkdir(parents=True)
    shutil.copy(SYSTEM_ELF, root / "_internal" / "libneedy.so")
    (root / "_internal" / "base_library.txt").write_text("not an ELF")
    (root / "_internal" / "link.so").symlink_to("libneedy.so")
    return root


def needed_by_system_elf() -> str:
    out = subprocess.run(["objdump", "-p", str(SYSTEM_ELF)], capture_output=True, text=True)
    references = out.stdout.partition("Version References:")[2]
    versions = [w[6:] for w in references.split() if w.startswith("GLIBC_")]
    return max(versions, key=lambda v: tuple(map(int, v.split("."))))


def test_above_the_floor_fails_naming_the_file_and_the_version(bundle: Path) -> None:
    done = gate(bundle, "2.0")
    assert done.returncode == 1, done.stderr
    assert done.stdout == (
        f"glibc gate: needs GLIBC_{needed_by_system_elf()} (_internal/libneedy.so); "
        "1 ELF files; FAIL: above the floor 2.0\n"
    )


def test_at_or_below_the_floor_passes(bundle: Path) -> None:
    needed = needed_by_system_elf()
    done = gate(bundle, needed)
    assert done.returncode == 0 and done.stdout.endswith("; ok\n"), done.stdout + done.stderr


def test_versions_compare_as_numbers_not_text(bundle: Path) -> None:
    assert gate(bundle, "2.100").returncode == 0  # 2.100 > 2.34, though "2.100" < "2.34"


def test_a_folder_without_elf_files_verifies_nothing_and_fails(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("hi")
    done = gate(tmp_path, "2.31")
    assert done.returncode == 2
    assert "no ELF file under" in done.stderr


def test_without_objdump_it_fails_closed(bundle: Path, tmp_path: Path) -> None:
    done = gate(bundle, "2.31", path=str(tmp_path / "empty-bin"))
    assert done.returncode == 2
    assert "objdump not found (install binutils); cannot verify" in done.stderr


def test_the_real_bundle_needs_no_newer_glibc_than_it_was_built_on() -> None:
    built = ROOT / "dist" / "flowproof"
    if not (built / "flowproof").is_file():
        pytest.skip("dist/flowproof is not built; `make freeze` builds it")
    host = platform.libc_ver()[1]
    done = gate(built, host)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "needs GLIBC_" in done.stdout

"""Release gate: the highest GLIBC_x.y any ELF file in a bundle needs must not pass the floor.

    python installer/glibc_gate.py --max 2.31 dist/flowproof

A PyInstaller bundle copies shared libraries from the build host (libstdc++, libpython, ...),
and those, not the bootloader, set the oldest glibc the bundle runs on: a Debian 12 build needs
2.36 because of its libstdc++. The gate reads each ELF file's version references
(`objdump -p`, the "required from libc.so.6" entries), prints the highest version and the file
that needs it, and exits 1 above --max. It fails closed: exit 2 when objdump is missing or
the folder holds no ELF file at all.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
ERR = sys.stderr
GLIBC = re.compile(r"\bGLIBC_(\d+(?:\.\d+)+)\b")


@dataclass(frozen=True, order=True)
class Need:
    version: tuple[int, ...]
    """The highest GLIBC_ version the file references, as numbers (2, 36)."""
    path: Path
    """The ELF file that references it."""

    @property
    def text(self) -> str:
        return ".".join(map(str, self.version))


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def elf_files(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as stream:
                if stream.read(4) == ELF_MAGIC:
                    found.append(path)
    return found


def glibc_references(objdump: str, path: Path) -> list[tuple[int, ...]]:
    """The GLIBC_ versions in the file's version references (what it needs, not what it
    defines)."""
    done = subprocess.run([objdump, "-p", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"glibc gate: objdump -p {path} failed: {done.stderr.strip()}")
    _, _, references = done.stdout.partition("Version References:")
    return [parse_version(match) for match in GLIBC.findall(references)]


def highest_need(root: Path, objdump: str) -> tuple[Need | None, int]:
    """The highest glibc version any ELF file under root needs (None: none needs glibc), and
    how many ELF files were read."""
    files = elf_files(root)
    needs = [
        Need(max(versions), path) for path in files if (versions := glibc_references(objdump, path))
    ]
    return (max(needs) if needs else None), len(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="installer/glibc_gate.py", description=__doc__)
    parser.add_argument("--max", required=True, help="the glibc floor, e.g. 2.31")
    parser.add_argument("bundle", type=Path)
    arguments = parser.parse_args(argv)
    floor = parse_version(arguments.max)
    objdump = shutil.which("objdump")
    if objdump is None:
        print("glibc gate: objdump not found (install binutils); cannot verify", file=sys.stderr)
        return 2
    if not arguments.bundle.is_dir():
        print(f"glibc gate: {arguments.bundle} is not a folder", file=sys.stderr)
        return 2
    need, count = highest_need(arguments.bundle, objdump)
    if count == 0:
        print(f"glibc gate: no ELF file under {arguments.bundle}; nothing verified", file=ERR)
        return 2
    if need is None:
        print(f"glibc gate: {count} ELF files, none references glibc")
        return 0
    where = need.path.relative_to(arguments.bundle)
    verdict = "ok" if need.version <= floor else f"FAIL: above the floor {arguments.max}"
    print(f"glibc gate: needs GLIBC_{need.text} ({where}); {count} ELF files; {verdict}")
    return 0 if need.version <= floor else 1


if __name__ == "__main__":
    sys.exit(main())

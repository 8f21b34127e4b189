"""Build the frozen engine and its release archive (what `make freeze` / `make release-archive`
run, and what each runner of .github/workflows/release.yml runs).

    python installer/build.py freeze             # PyInstaller onedir -> dist/flowproof/
    python installer/build.py archive            # dist/release/flowproof-<v>-<target>.tar.gz
                                                 #   + dist/release/SHA256SUMS
    python installer/build.py sums DIR           # rewrite DIR/SHA256SUMS over every archive in DIR
    python installer/build.py target             # print this machine's target, e.g. linux-x64-gnu

Targets use npm's vocabulary (process.platform, process.arch, and on Linux the C library), so
the archive `flowproof-0.1.0-linux-x64-gnu.tar.gz` and the npm package
`@flowproof/cli-linux-x64-gnu` name the same build. installer/install.sh detects the same names.
The archive holds one folder, `flowproof/`: the onedir bundle, executable at `flowproof/flowproof`,
and the licence, `flowproof/LICENSE`.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "installer" / "pyinstaller" / "flowproof.spec"
DIST = ROOT / "dist"
BUNDLE = DIST / "flowproof"
RELEASE = DIST / "release"
SUMS = "SHA256SUMS"
LICENSE = ROOT / "LICENSE"  # the Apache-2.0 text, shipped in every archive and package
ARCHIVE_PATTERN = re.compile(r"^flowproof-[0-9][^-]*-[a-z0-9]+-[a-z0-9]+(-gnu|-musl)?\.tar\.gz$")

# No Windows target: the engine starts agents through /bin/sh and process groups (it exits 2 on
# Windows and points at WSL), so a Windows build could not run a flow.
OPERATING_SYSTEMS = {"linux": "linux", "darwin": "darwin"}
ARCHITECTURES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def version() -> str:
    """flowproof.__version__, read without importing the package (the build may run elsewhere)."""
    text = (ROOT / "flowproof" / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if found is None:
        raise SystemExit("build: no __version__ in flowproof/_version.py")
    return found.group(1)


def host_target() -> str:
    """This machine's target: <os>-<arch>, plus -gnu or -musl on Linux."""
    system = OPERATING_SYSTEMS.get(sys.platform)
    arch = ARCHITECTURES.get(platform.machine().lower())
    if system is None or arch is None:
        raise SystemExit(f"build: unsupported platform {sys.platform}/{platform.machine()}")
    if system != "linux":
        return f"{system}-{arch}"
    libc = "gnu" if platform.libc_ver()[0] == "glibc" else "musl"
    return f"{system}-{arch}-{libc}"


def executable(bundle: Path = BUNDLE) -> Path:
    return bundle / ("flowproof.exe" if sys.platform == "win32" else "flowproof")


def source_date_epoch() -> str:
    """The last commit's time, so two builds of one commit are bit-identical."""
    done = subprocess.run(
        ["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "315532800"


def freeze() -> Path:
    """Run PyInstaller on the committed spec; the bundle lands in dist/flowproof/."""
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH") or source_date_epoch(),
        # this checkout's flowproof, ahead of any other installed copy
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level=WARN"]
    command += ["--distpath", str(DIST), "--workpath", str(ROOT / "build" / "pyinstaller")]
    subprocess.run([*command, str(SPEC)], cwd=ROOT, env=env, check=True)
    built = executable()
    if not built.is_file():
        raise SystemExit(f"build: PyInstaller finished but {built} is missing")
    print(f"build: {built.relative_to(ROOT)}")
    return built


def _normalised(info: tarfile.TarInfo, mtime: int) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = mtime
    return info


def archive_members(bundle: Path) -> list[tuple[str, Path]]:
    """(name in the archive, file) for the bundle under `flowproof/` and the licence beside
    the executable, sorted by name."""
    members = {
        (Path("flowproof") / member.relative_to(bundle)).as_posix(): member
        for member in [bundle, *bundle.rglob("*")]
    }
    members.setdefault(f"flowproof/{LICENSE.name}", LICENSE)
    return sorted(members.items())


def archive(
    bundle: Path = BUNDLE,
    release: Path = RELEASE,
    target: str | None = None,
    release_version: str | None = None,
) -> Path:
    """Pack the onedir bundle as flowproof-<version>-<target>.tar.gz (sorted entries, fixed
    owners and times: reproducible) and refresh SHA256SUMS beside it."""
    if not executable(bundle).is_file():
        raise SystemExit(f"build: {executable(bundle)} is missing; run `make freeze` first")
    release.mkdir(parents=True, exist_ok=True)
    path = release / f"flowproof-{release_version or version()}-{target or host_target()}.tar.gz"
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH") or source_date_epoch())
    members = archive_members(bundle)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=mtime) as packed:
        with tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, member in members:
                tar.add(
                    member,
                    arcname=name,
                    recursive=False,
                    filter=lambda info: _normalised(info, mtime),
                )
    partial.replace(path)
    write_sums(release)
    print(f"build: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_sums(release: Path) -> Path:
    """SHA256SUMS in `sha256sum` format, one line per archive in `release`, sorted by name."""
    archives = sorted(p for p in release.iterdir() if ARCHIVE_PATTERN.match(p.name))
    if not archives:
        raise SystemExit(f"build: no flowproof-*.tar.gz in {release}")
    lines = "".join(f"{sha256(p)}  {p.name}\n" for p in archives)
    sums = release / SUMS
    sums.write_text(lines, encoding="utf-8")
    return sums


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="installer/build.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("freeze", help="PyInstaller onedir into dist/flowproof/")
    packing = commands.add_parser("archive", help="the release archive and SHA256SUMS")
    packing.add_argument("--bundle", type=Path, default=BUNDLE)
    packing.add_argument("--out", type=Path, default=RELEASE)
    packing.add_argument("--target", default=None, help="override the detected target")
    summing = commands.add_parser("sums", help="rewrite DIR/SHA256SUMS over its archives")
    summing.add_argument("directory", type=Path)
    commands.add_parser("target", help="print this machine's target")
    arguments = parser.parse_args(argv)
    if arguments.command == "freeze":
        if shutil.which("git") is None and "SOURCE_DATE_EPOCH" not in os.environ:
            print("build: git not found; SOURCE_DATE_EPOCH falls back to 1980", file=sys.stderr)
        freeze()
    elif arguments.command == "archive":
        archive(arguments.bundle, arguments.out, arguments.target)
    elif arguments.command == "sums":
        print(write_sums(arguments.directory))
    else:
        print(host_target())


if __name__ == "__main__":
    main()

"""Build the Python package's sdist and wheels, the way the package index will take them (what
`make python-dist` runs, and the release workflow's Python job).

    python installer/python_dist.py [--out dist/python]

writes, for distribution `flowproof-cli` (the index's `flowproof` is another project):

    flowproof_cli-<v>.tar.gz                              the sdist
    flowproof_cli-<v>-py3-none-any.whl                    pure Python: every OS and CPU, the
                                                          filesystem loop in Python
    flowproof_cli-<v>-cp311-abi3-manylinux…_x86_64.whl    Linux x86_64 only: the compiled
                                                          loop (containment/_fsloop.c), on the
                                                          stable ABI, so for every CPython >= 3.11

Both wheels are built from the sdist, unpacked, so what the index serves installs from what it
was built from. The compiled wheel is tagged by auditwheel, which checks that it needs no
glibc above 2.31 (the floor the release archives are gated at) and no library outside the
manylinux set; it adds the older manylinux tags the wheel also meets (the loop needs only
glibc 2.17), so the name reads `manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_31_x86_64`.
Then every file's contents are checked (the licence, the metadata, the entry points; no tests/
or bench/) and `twine check --strict` runs on all three.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from installer.build import ROOT, source_date_epoch, version  # noqa: E402

DISTRIBUTION = "flowproof-cli"
FILE_PREFIX = "flowproof_cli"
MANYLINUX = "manylinux_2_31_x86_64"
OUT = ROOT / "dist" / "python"
COMPILED_LOOP = "flowproof/containment/_fsloop.abi3.so"
PROJECT_URLS = ("Homepage", "Documentation", "Source", "Issues")
NOT_SHIPPED = ("tests/", "bench/", "examples/", "installer/", "npm/", "action/", "docs/")


class DistError(Exception):
    """A dist that must not be published: what is wrong, and in which file."""


def log(line: str) -> None:
    print(f"python-dist: {line}", file=sys.stderr, flush=True)


def builds_the_compiled_loop() -> bool:
    return sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")


def run(command: list[str | Path], *, cwd: Path = ROOT, env: dict[str, str] | None = None) -> None:
    words = [str(part) for part in command]
    log(" ".join(words))
    done = subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
        raise DistError(f"`{' '.join(words)}` failed (exit {done.returncode}):\n{tail}")


def build_environment(pure: bool) -> dict[str, str]:
    environment = {
        **os.environ,
        "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH") or source_date_epoch(),
    }
    environment.pop("FLOWPROOF_PURE_PYTHON", None)
    if pure:
        environment["FLOWPROOF_PURE_PYTHON"] = "1"
    return environment


def python_build(source: Path, out: Path, kind: str, *, pure: bool = False) -> Path:
    """`python -m build` without isolation: the build tools are the `dist` extra's, so a
    rebuild needs no network."""
    before = set(out.glob("*"))
    run(
        [sys.executable, "-m", "build", f"--{kind}", "--no-isolation", "--outdir", out, source],
        env=build_environment(pure),
    )
    [made] = set(out.glob("*")) - before
    return made


def unpacked(sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    [tree] = into.iterdir()
    return tree


def manylinux(wheel: Path, out: Path) -> Path:
    """Tag the compiled wheel manylinux_2_31 (auditwheel refuses it if it needs more)."""
    before = set(out.glob("*.whl"))
    run([sys.executable, "-m", "auditwheel", "repair", "--plat", MANYLINUX, "-w", out, wheel])
    [tagged] = set(out.glob("*.whl")) - before
    return tagged


def build(out: Path) -> list[Path]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="flowproof-python-dist-") as scratch:
        work = Path(scratch)
        sdist = python_build(ROOT, out, "sdist")
        tree = unpacked(sdist, work / "sdist")
        wheels = [python_build(tree, out, "wheel", pure=True)]
        if builds_the_compiled_loop():
            compiled = python_build(tree, work, "wheel")
            wheels.append(manylinux(compiled, out))
        else:
            log(f"no compiled wheel on {sys.platform}/{platform.machine()}: Linux x86_64 only")
    return [sdist, *wheels]


def wheel_metadata(names: list[str], read: zipfile.ZipFile) -> tuple[str, str]:
    info = f"{FILE_PREFIX}-{version()}.dist-info"
    for required in ("METADATA", "entry_points.txt", "licenses/LICENSE"):
        if f"{info}/{required}" not in names:
            raise DistError(f"{read.filename} has no {info}/{required}")
    return (
        read.read(f"{info}/METADATA").decode(),
        read.read(f"{info}/entry_points.txt").decode(),
    )


def check_metadata(path: Path, text: str) -> None:
    headers = HeaderParser().parsestr(text)
    expected = {
        "Name": DISTRIBUTION,
        "Version": version(),
        "Requires-Python": ">=3.11",
        "License-Expression": "Apache-2.0",
        "License-File": "LICENSE",
    }
    for field, value in expected.items():
        if headers.get(field) != value:
            raise DistError(f"{path.name}: {field} is {headers.get(field)!r}, not {value!r}")
    labels = {url.split(",")[0].strip() for url in headers.get_all("Project-URL") or []}
    missing = [label for label in PROJECT_URLS if label not in labels]
    if missing:
        raise DistError(f"{path.name}: no Project-URL for {', '.join(missing)}")
    if not headers.get_all("Classifier"):
        raise DistError(f"{path.name}: no classifiers")


def check_entry_points(path: Path, text: str) -> None:
    for section, line in (
        ("[console_scripts]", "flowproof = flowproof.cli:main"),
        ("[pytest11]", "flowproof = flowproof.doors.pytest_plugin"),
    ):
        body = text.split(section, 1)[1].split("[", 1)[0] if section in text else ""
        if line not in body.splitlines():
            raise DistError(f"{path.name}: entry_points.txt has no `{line}` under {section}")


def check_wheel(path: Path, compiled: bool) -> None:
    with zipfile.ZipFile(path) as read:
        names = read.namelist()
        metadata, entry_points = wheel_metadata(names, read)
    check_metadata(path, metadata)
    check_entry_points(path, entry_points)
    stray = [name for name in names if name.startswith(NOT_SHIPPED)]
    if stray:
        raise DistError(f"{path.name} ships files that are not the package: {stray[:5]}")
    if not any(name.startswith("flowproof/report/templates/") for name in names):
        raise DistError(f"{path.name} lacks the report templates (flowproof/report/templates/)")
    if compiled and MANYLINUX not in path.name:
        raise DistError(f"{path.name} is not tagged {MANYLINUX}")
    has_loop = COMPILED_LOOP in names
    if has_loop != compiled:
        raise DistError(
            f"{path.name} {'lacks' if compiled else 'carries'} {COMPILED_LOOP}"
            + ("; was gcc and the Python headers there? (setup.py builds it)" if compiled else "")
        )


def check_sdist(path: Path) -> None:
    with tarfile.open(path) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    for required in ("LICENSE", "pyproject.toml", "setup.py", "flowproof/containment/_fsloop.c"):
        if required not in names:
            raise DistError(f"{path.name} has no {required}")
    built = [name for name in names if name.endswith((".so", ".pyd", ".pyc"))]
    if built:
        raise DistError(f"{path.name} carries built files: {built[:5]}")


def check(dists: list[Path]) -> None:
    for dist in dists:
        if dist.name.endswith(".tar.gz"):
            check_sdist(dist)
        else:
            check_wheel(dist, compiled=not dist.name.endswith("-py3-none-any.whl"))
        log(f"checked {dist.name}")
    run([sys.executable, "-m", "twine", "check", "--strict", *dists])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="installer/python_dist.py", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="where the dists go (emptied)")
    parser.add_argument("--check-only", action="store_true", help="check the dists in --out")
    arguments = parser.parse_args(argv)
    try:
        if arguments.check_only:
            dists = sorted(arguments.out.glob(f"{FILE_PREFIX}-*"))
            if not dists:
                raise DistError(f"no {FILE_PREFIX}-* in {arguments.out}; run `make python-dist`")
        else:
            dists = build(arguments.out)
        check(dists)
    except DistError as error:
        print(f"python-dist: {error}", file=sys.stderr)
        return 1
    for dist in dists:
        print(dist.relative_to(ROOT) if dist.is_relative_to(ROOT) else dist)
    return 0


if __name__ == "__main__":
    sys.exit(main())

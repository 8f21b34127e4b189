"""The package index's `flowproof` is another project. Installed into the same environment as
ours (`flowproof-cli`), the `flowproof` command refuses to start, naming both and the fix.

Real installs, nothing mocked: a wheel of this checkout and a small wheel named `flowproof`
(another version, and a module of its own inside the `flowproof` package, as the other
project's wheel has) are installed by pip into a fresh venv, and the venv's own `flowproof`
console script is run. The venv reaches its dependencies (click, ...) through a `.pth` line
naming this interpreter's site-packages, so nothing is fetched.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from flowproof._version import __version__
from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

OTHER_VERSION = "0.23.28"


def run(command: list[str | Path], **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=300,
        **options,  # type: ignore[call-overload]
    )


def checked(command: list[str | Path], **options: object) -> subprocess.CompletedProcess[str]:
    done = run(command, **options)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def other_flowproof_wheel(folder: Path) -> Path:
    """A wheel named `flowproof` in another version, shipping a module inside `flowproof/`."""
    info = f"flowproof-{OTHER_VERSION}.dist-info"
    files = {
        "flowproof/flow.py": b'"""Another project\'s module."""\n',
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: flowproof\nVersion: {OTHER_VERSION}\n"
            "Summary: Another project that has the name flowproof on the package index\n"
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = [record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    path = folder / f"flowproof-{OTHER_VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def our_wheel(folder: Path) -> Path:
    """A wheel of this checkout (the pure-Python one), built by pip from a copy of the sources:
    a build in the checkout itself would leave build/ there, and reuse it next time."""
    sources = folder / "sources"
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        sources.mkdir(exist_ok=True)
        shutil.copy2(ROOT / name, sources / name)
    ignored = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(ROOT / "flowproof", sources / "flowproof", ignore=ignored)
    environment = {**os.environ, "FLOWPROOF_PURE_PYTHON": "1"}
    checked(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--wheel-dir", folder, sources],
        env=environment,
    )
    [built] = folder.glob("flowproof_cli-*.whl")
    return built


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with our wheel installed; returns its bin folder."""
    folder = tmp_path_factory.mktemp("other-flowproof")
    home = folder / "venv"
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    site = Path(
        checked(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
        ).stdout.strip()
    )
    # flowproof's dependencies, from the interpreter running the tests, after the venv's own
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip_install(python, our_wheel(folder))
    return home / "bin"


def pip_install(python: Path, *wheels: Path) -> None:
    checked(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--no-deps",
            "--no-index",
            *wheels,
        ]
    )


def flowproof_in(bin_folder: Path, *arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("FLOWPROOF_")}
    clean["PATH"] = f"{bin_folder}{os.pathsep}{clean.get('PATH', '')}"
    clean.pop("PYTHONPATH", None)  # the venv's install, not this checkout
    return run([bin_folder / "flowproof", *arguments], cwd=cwd, env=clean)


def pytest_flowproof(python: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`pytest --flowproof` in the venv, on a folder with no spec in it."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("FLOWPROOF_")}
    clean.pop("PYTHONPATH", None)
    command = [python, "-m", "pytest", "--flowproof", ".", "-p", "no:cacheprovider"]
    return run(command, cwd=cwd, env=clean)


def test_our_install_alone_starts(environment: Path, tmp_path: Path) -> None:
    done = flowproof_in(environment, "--version", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"flowproof {__version__}\n"), done.stderr
    where = run(
        [environment / "python", "-c", "import flowproof; print(flowproof.__file__)"], cwd=tmp_path
    )
    assert where.stdout.startswith(str(environment.parent)), where.stdout  # not this checkout
    plugin = pytest_flowproof(environment / "python", tmp_path)
    assert plugin.returncode == 5, plugin.stdout + plugin.stderr  # ran, and found no spec


def test_beside_the_other_flowproof_it_refuses_to_start(environment: Path, tmp_path: Path) -> None:
    python = environment / "python"
    pip_install(python, other_flowproof_wheel(tmp_path))
    try:
        for command in (["--version"], ["run", "specs/"], ["doctor", "--agent", "true"]):
            done = flowproof_in(environment, *command, cwd=tmp_path)
            assert done.returncode == 2, (command, done.stdout, done.stderr)
            assert done.stdout == "", command
            message = done.stderr
            assert message.startswith("error: two distributions install the `flowproof` package")
            assert f"flowproof-cli {__version__}" in message
            assert f"flowproof {OTHER_VERSION}" in message
            assert (
                "`pip uninstall flowproof`, then `pip install --force-reinstall flowproof-cli`"
                in message
            )
            site = checked(
                [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
            ).stdout.strip()
            assert site in message
        through_module = run([python, "-m", "flowproof", "--version"], cwd=tmp_path)
        assert through_module.returncode == 2, through_module.stderr
        plugin = pytest_flowproof(python, tmp_path)
        assert plugin.returncode == 4, plugin.stdout + plugin.stderr  # a usage error
        assert "ERROR: two distributions install the `flowproof` package" in plugin.stderr
        assert f"flowproof {OTHER_VERSION}" in plugin.stderr
    finally:
        # the fix the message gives: uninstall the other distribution (pip of this venv)
        checked([sys.executable, "-m", "pip", "--python", python, "uninstall", "-y", "flowproof"])
    after = flowproof_in(environment, "--version", cwd=tmp_path)
    assert (after.returncode, after.stdout) == (0, f"flowproof {__version__}\n"), after.stderr

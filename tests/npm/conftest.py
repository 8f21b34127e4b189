"""The npm channel built for real, around a fake engine: npm/scripts/pack.mjs packs a fake onedir
bundle, and `npm install --offline` puts both tarballs into an empty project, with the registry
pointed at a dead loopback port so nothing leaves the machine. Nothing here needs the
PyInstaller build."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliResult

NPM = ROOT / "npm"
PACK = NPM / "scripts" / "pack.mjs"
PLATFORM_JS = NPM / "flowproof" / "lib" / "platform.js"
OFFLINE = {
    "npm_config_registry": "http://127.0.0.1:9/",  # a dead loopback port: no request can succeed
    "npm_config_update_notifier": "false",
    "npm_config_audit": "false",
    "npm_config_fund": "false",
}

if shutil.which("node") is None or shutil.which("npm") is None:
    pytest.skip(
        "the npm launcher tests need `node` (18 or later) and `npm` on PATH",
        allow_module_level=True,
    )

FAKE_ENGINE = """\
#!/bin/sh
# A stand-in for the onedir engine ({who}).
case "$1" in
  --version) echo "flowproof 0.0.0-fake ({who})" ;;
  args) shift; for arg in "$@"; do printf '[%s]\\n' "$arg"; done ;;
  exit) exit "$2" ;;
  wait) echo $$ > "$2.part"; mv "$2.part" "$2"; exec sleep 60 ;;
  die) kill -"$2" $$ ;;
  *) echo "fake engine: unknown command $1" >&2; exit 64 ;;
esac
"""


def write_fake_engine(path: Path, who: str) -> Path:
    """An executable shell script that answers --version, echoes `args`, exits with `exit N`,
    waits for a signal after `wait PIDFILE` and kills itself with `die SIGNAL`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_ENGINE.format(who=who), encoding="utf-8")
    path.chmod(0o755)
    return path


def write_fake_bundle(folder: Path) -> Path:
    """A directory shaped like PyInstaller's onedir output: the executable and `_internal/`."""
    write_fake_engine(folder / "flowproof", "engine package")
    (folder / "_internal").mkdir()
    (folder / "_internal" / "base_library.zip").write_bytes(b"not really a zip")
    return folder


def node_eval(source: str) -> str:
    done = subprocess.run(
        ["node", "-e", source], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def platform_eval(expression: str) -> object:
    """`expression` evaluated in node with `platform` = npm/flowproof/lib/platform.js."""
    source = f"const platform = require({json.dumps(str(PLATFORM_JS))});"
    return json.loads(node_eval(f"{source} console.log(JSON.stringify({expression}))"))


@dataclass
class Packed:
    out: Path
    stdout: str
    launcher: Path
    engine: Path
    key: str


def run_pack(*args: str | Path, cwd: Path) -> CliResult:
    done = subprocess.run(
        ["node", str(PACK), *map(str, args)],
        cwd=cwd,
        env={**os.environ, **OFFLINE},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def npm_install(project: Path, *tarballs: Path, cache: Path) -> None:
    project.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--offline", *map(str, tarballs)],
        cwd=project,
        env={**os.environ, **OFFLINE, "npm_config_cache": str(cache)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )


@pytest.fixture(scope="session")
def platform_key() -> str:
    key = platform_eval("platform.currentKey()")
    assert isinstance(key, str)
    if platform_eval(f"platform.targetFor({json.dumps(key)}) || null") is None:
        pytest.skip(f"no flowproof engine package is defined for this platform ({key})")
    return key


@pytest.fixture(scope="session")
def packed(tmp_path_factory: pytest.TempPathFactory, platform_key: str) -> Packed:
    """Both tarballs, packed from a fake bundle with the version read from flowproof/_version.py."""
    from flowproof._version import __version__

    work = tmp_path_factory.mktemp("pack")
    write_fake_bundle(work / "dist" / "flowproof")
    result = run_pack("--bundle", "dist/flowproof", "--out", "dist/npm", cwd=work)
    assert result.code == 0, result.output
    out = work / "dist" / "npm"
    return Packed(
        out=out,
        stdout=result.stdout,
        launcher=out / f"flowproof-{__version__}.tgz",
        engine=out / f"flowproof-cli-{platform_key}-{__version__}.tgz",
        key=platform_key,
    )


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory, packed: Packed) -> Path:
    """An empty project into which both tarballs were installed offline."""
    root = tmp_path_factory.mktemp("project")
    npm_install(root, packed.launcher, packed.engine, cache=root.parent / "npm-cache")
    return root


@pytest.fixture
def launcher_only(tmp_path: Path, project: Path) -> Path:
    """A project whose node_modules holds the launcher but no engine package, as after
    `npm ci --omit=optional`; returns the launcher script."""
    shutil.copytree(project / "node_modules" / "flowproof", tmp_path / "node_modules" / "flowproof")
    return tmp_path / "node_modules" / "flowproof" / "bin" / "flowproof.js"


def not_executable(path: Path) -> Path:
    path.chmod(path.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    return path

"""The npm launcher (npm/flowproof/bin/flowproof.js) as users get it: installed from its tarball
into a project, started through node_modules/.bin/flowproof, running a fake engine."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from flowproof._version import __version__
from tests.conftest import CliResult
from tests.npm.conftest import Packed, not_executable, platform_eval, write_fake_engine

PACKAGE_ENGINE = "flowproof 0.0.0-fake (engine package)\n"
OVERRIDE_ENGINE = "flowproof 0.0.0-fake (FLOWPROOF_BIN)\n"


def launch(
    launcher: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> CliResult:
    done = subprocess.run(
        [str(launcher), *args],
        cwd=cwd or launcher.parent,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def launcher(project: Path) -> Path:
    """The `flowproof` command npm linked into the project (a symlink to bin/flowproof.js)."""
    return project / "node_modules" / ".bin" / "flowproof"


@pytest.fixture
def override(tmp_path: Path) -> Path:
    return write_fake_engine(tmp_path / "my build" / "flowproof", "FLOWPROOF_BIN")


def test_the_platform_package_engine_runs_with_stdout_and_stderr_untouched(launcher: Path) -> None:
    result = launch(launcher, "--version")
    assert (result.code, result.stdout, result.stderr) == (0, PACKAGE_ENGINE, "")


def test_arguments_reach_the_engine_unchanged(launcher: Path) -> None:
    result = launch(launcher, "args", "run", "specs/a b.yaml", "", "--json", "*")
    assert result.stdout == "[run]\n[specs/a b.yaml]\n[]\n[--json]\n[*]\n"
    assert result.code == 0


@pytest.mark.parametrize("code", [0, 1, 2, 3])
def test_the_engine_exit_code_passes_through(launcher: Path, code: int) -> None:
    assert launch(launcher, "exit", str(code)).code == code


def test_an_engine_killed_by_a_signal_is_128_plus_n_never_0(launcher: Path) -> None:
    assert launch(launcher, "die", "KILL").code == 128 + signal.SIGKILL


def test_flowproof_bin_is_announced_and_used(launcher: Path, override: Path) -> None:
    result = launch(launcher, "--version", env={"FLOWPROOF_BIN": str(override)})
    assert result.stderr == f"flowproof: using FLOWPROOF_BIN={override}\n"
    assert (result.code, result.stdout) == (0, OVERRIDE_ENGINE)


def test_flowproof_bin_is_announced_on_a_failing_run_too(launcher: Path, override: Path) -> None:
    result = launch(launcher, "exit", "1", env={"FLOWPROOF_BIN": str(override)})
    assert (result.code, result.stderr) == (1, f"flowproof: using FLOWPROOF_BIN={override}\n")


def test_a_missing_flowproof_bin_exits_2_without_falling_back(
    launcher: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nope" / "flowproof"
    result = launch(launcher, "--version", env={"FLOWPROOF_BIN": str(missing)})
    assert result.stderr == (
        f"flowproof: using FLOWPROOF_BIN={missing}\n"
        f"flowproof: FLOWPROOF_BIN does not exist: {missing}\n"
    )
    assert (result.code, result.stdout) == (2, "")


def test_a_non_executable_flowproof_bin_exits_2(launcher: Path, override: Path) -> None:
    not_executable(override)
    result = launch(launcher, "--version", env={"FLOWPROOF_BIN": str(override)})
    assert result.stderr == (
        f"flowproof: using FLOWPROOF_BIN={override}\n"
        f"flowproof: FLOWPROOF_BIN is not executable: {override} "
        "(chmod +x it, or unset FLOWPROOF_BIN)\n"
    )
    assert (result.code, result.stdout) == (2, "")


def test_a_folder_as_flowproof_bin_exits_2(launcher: Path, override: Path) -> None:
    folder = override.parent
    result = launch(launcher, "--version", env={"FLOWPROOF_BIN": str(folder)})
    assert result.stderr == (
        f"flowproof: using FLOWPROOF_BIN={folder}\n"
        f"flowproof: FLOWPROOF_BIN is a directory, not the engine executable: {folder}\n"
    )
    assert result.code == 2


def test_an_empty_flowproof_bin_counts_as_unset(launcher: Path) -> None:
    result = launch(launcher, "--version", env={"FLOWPROOF_BIN": ""})
    assert (result.code, result.stdout, result.stderr) == (0, PACKAGE_ENGINE, "")


def test_a_missing_platform_package_exits_2_explaining_omit_optional(
    launcher_only: Path, packed: Packed
) -> None:
    name = f"@flowproof/cli-{packed.key}"
    result = launch(launcher_only, "--version")
    assert result.stderr == (
        f"flowproof: the flowproof engine for this platform ({packed.key}) is not installed: "
        f"{name} is missing.\n"
        "flowproof: npm installs it as an optional dependency of flowproof, so it is left out "
        "when optional dependencies\n"
        "flowproof: are omitted (`npm install --omit=optional`, `npm ci --omit=optional`, "
        "`--no-optional`, `omit=optional`\n"
        "flowproof: in .npmrc, `yarn --ignore-optional`), or when package-lock.json was written "
        "without this platform's\n"
        "flowproof: entry (https://github.com/npm/cli/issues/4828).\n"
        f"flowproof: Fix: reinstall without --omit=optional, or `npm install {name}@{__version__}`;\n"
        "flowproof: or point FLOWPROOF_BIN at a flowproof engine.\n"
    )
    assert (result.code, result.stdout) == (2, "")


def test_another_platforms_package_is_named_when_this_ones_is_missing(
    launcher_only: Path, packed: Packed
) -> None:
    other = "darwin-arm64" if packed.key != "darwin-arm64" else "linux-x64-gnu"
    foreign = launcher_only.parents[2] / "@flowproof" / f"cli-{other}"  # beside flowproof/
    foreign.mkdir(parents=True)
    (foreign / "package.json").write_text(json.dumps({"name": f"@flowproof/cli-{other}"}))
    result = launch(launcher_only, "--version")
    assert result.code == 2
    assert f"node_modules holds @flowproof/cli-{other}, built for another platform" in result.stderr
    assert "--omit=optional" not in result.stderr


def test_flowproof_bin_still_works_without_the_platform_package(
    launcher_only: Path, override: Path
) -> None:
    result = launch(launcher_only, "--version", env={"FLOWPROOF_BIN": str(override)})
    assert (result.code, result.stdout) == (0, OVERRIDE_ENGINE)


def test_mixed_launcher_and_engine_versions_exit_2(tmp_path: Path, project: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(project, copy, symlinks=True)
    engine_package = next((copy / "node_modules" / "@flowproof").iterdir())
    manifest = json.loads((engine_package / "package.json").read_text())
    (engine_package / "package.json").write_text(json.dumps({**manifest, "version": "0.0.1"}))
    result = launch(copy / "node_modules" / ".bin" / "flowproof", "--version")
    assert result.stderr == (
        f"flowproof: mixed versions: flowproof {__version__} found {manifest['name']} 0.0.1; "
        f"reinstall so both are {__version__} (`npm install flowproof@{__version__}`).\n"
    )
    assert result.code == 2


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_launcher_stops_the_engine_and_exits_128_plus_n(
    launcher: Path, tmp_path: Path, sent: signal.Signals
) -> None:
    pidfile = tmp_path / "engine.pid"
    started = subprocess.Popen(
        [str(launcher), "wait", str(pidfile)],
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    engine = 0
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists():
            assert started.poll() is None, started.communicate()
            assert time.monotonic() < deadline, "the fake engine never started"
            time.sleep(0.05)
        engine = int(pidfile.read_text())
        started.send_signal(sent)
        assert started.wait(timeout=30) == 128 + sent
        with pytest.raises(ProcessLookupError):
            os.kill(engine, 0)  # gone, not orphaned: the launcher's child was reaped
    finally:
        if started.poll() is None:
            started.kill()
            started.wait()
        if engine:
            try:
                os.kill(engine, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert started.stderr is not None
        started.stderr.close()


@pytest.mark.parametrize(
    ("ldd", "libc"),
    [
        ("#!/bin/bash\n# This file is part of the GNU C Library.\n", "glibc"),
        ('#!/bin/sh\nexec /lib/ld-musl-x86_64.so.1 --list "$@"\n', "musl"),
        ("\x7fELF binary we cannot read as text", None),
    ],
)
def test_libc_is_told_from_ldd(ldd: str, libc: str | None) -> None:
    assert platform_eval(f"platform.libcFromLdd({json.dumps(ldd)})") == libc


def test_a_platform_without_an_engine_package_exits_2_listing_the_supported_ones(
    launcher: Path, tmp_path: Path
) -> None:
    pretend = tmp_path / "mips.js"
    pretend.write_text("Object.defineProperty(process, 'arch', { value: 'mips' });\n")
    keys = platform_eval("platform.TARGETS.map((t) => t.key).join(', ')")
    key = platform_eval("platform.currentKey()")
    assert isinstance(key, str)
    mips = key.replace(f"-{key.split('-')[1]}", "-mips", 1)
    result = launch(launcher, "--version", env={"NODE_OPTIONS": f"--require {pretend}"})
    assert result.stderr == (
        f"flowproof: no flowproof engine is published for this platform ({mips}); "
        f"supported: {keys}.\n"
        "flowproof: set FLOWPROOF_BIN to an engine built for it, or use the install script.\n"
    )
    assert result.code == 2


def test_an_engine_package_without_its_executable_exits_2(tmp_path: Path, project: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(project, copy, symlinks=True)
    engine_package = next((copy / "node_modules" / "@flowproof").iterdir())
    (engine_package / "flowproof" / "flowproof").unlink()
    result = launch(copy / "node_modules" / ".bin" / "flowproof", "--version")
    assert result.stderr == (
        f"flowproof: @flowproof/{engine_package.name} is incomplete: "
        f"{engine_package / 'flowproof' / 'flowproof'} does not exist; reinstall it.\n"
    )
    assert result.code == 2


def pretend(tmp_path: Path, name: str, source: str) -> dict[str, str]:
    """NODE_OPTIONS that run `source` before the launcher: this machine, seen as another."""
    script = tmp_path / f"{name}.js"
    script.write_text(source)
    return {"NODE_OPTIONS": f"--require {script}"}


def test_windows_exits_2_pointing_at_wsl_not_at_a_missing_package(
    launcher: Path, tmp_path: Path
) -> None:
    windows = pretend(
        tmp_path, "win32", "Object.defineProperty(process, 'platform', { value: 'win32' });\n"
    )
    result = launch(launcher, "--version", env=windows)
    assert result.stderr == (
        "flowproof: Windows is not supported yet; run flowproof in WSL (Windows Subsystem for "
        "Linux), where `npm install flowproof` installs the Linux engine.\n"
    )
    assert (result.code, result.stdout) == (2, "")


def test_musl_exits_2_naming_a_glibc_image(launcher: Path, tmp_path: Path) -> None:
    alpine = pretend(
        tmp_path,
        "alpine",
        "const fs = require('fs');\n"
        "const read = fs.readFileSync;\n"
        "fs.readFileSync = (file, ...rest) => file === '/usr/bin/ldd'\n"
        "  ? '#!/bin/sh\\nexec /lib/ld-musl-x86_64.so.1 --list \"$@\"\\n' : read(file, ...rest);\n",
    )
    result = launch(launcher, "--version", env=alpine)
    assert result.stderr == (
        "flowproof: musl-based Linux (Alpine) is not supported: the engine is built against "
        "glibc. Use a glibc-based image (Debian, Ubuntu, e.g. node:24-slim), or the Python "
        "package.\n"
    )
    assert (result.code, result.stdout) == (2, "")

"""npm/scripts/pack.mjs: the one command `make dist` runs after the onedir build, on a fake
bundle. What it packs must install offline and run; what npm pack would silently lose (symlinks)
must stop it."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from flowproof._version import __version__
from tests.npm.conftest import OFFLINE, Packed, platform_eval, run_pack, write_fake_bundle


def manifest(tarball: Path) -> dict[str, object]:
    with tarfile.open(tarball) as archive:
        member = archive.extractfile("package/package.json")
        assert member is not None
        return json.loads(member.read())


def test_pack_prints_the_two_tarballs_it_wrote(packed: Packed) -> None:
    assert packed.stdout == (
        f"dist/npm/flowproof-{__version__}.tgz\n"
        f"dist/npm/flowproof-cli-{packed.key}-{__version__}.tgz\n"
    )
    assert sorted(path.name for path in packed.out.iterdir()) == sorted(
        [packed.launcher.name, packed.engine.name]
    )


def test_the_launcher_has_a_bin_no_scripts_and_only_exact_optional_dependencies(
    packed: Packed,
) -> None:
    launcher = manifest(packed.launcher)
    keys = platform_eval("platform.TARGETS.map((t) => t.key)")
    assert isinstance(keys, list)
    assert launcher["name"] == "flowproof"
    assert launcher["version"] == __version__
    assert launcher["bin"] == {"flowproof": "bin/flowproof.js"}
    assert launcher["optionalDependencies"] == {
        f"@flowproof/cli-{key}": __version__ for key in keys
    }
    assert not {"scripts", "dependencies", "peerDependencies"} & set(launcher)
    with tarfile.open(packed.launcher) as archive:
        names = sorted(archive.getnames())
    assert names == [
        "package/LICENSE",
        "package/README.md",
        "package/bin/flowproof.js",
        "package/lib/platform.js",
        "package/package.json",
    ]


def test_the_engine_package_declares_its_platform_and_keeps_the_bundle_executable(
    packed: Packed,
) -> None:
    engine = manifest(packed.engine)
    target = platform_eval(f"platform.targetFor({json.dumps(packed.key)})")
    assert isinstance(target, dict)
    assert engine["name"] == f"@flowproof/cli-{packed.key}"
    assert engine["version"] == __version__
    assert (engine["os"], engine["cpu"]) == ([target["os"]], [target["cpu"]])
    assert engine.get("libc") == ([target["libc"]] if target["os"] == "linux" else None)
    assert not {"bin", "scripts", "dependencies"} & set(engine)
    with tarfile.open(packed.engine) as archive:
        modes = {member.name: member.mode for member in archive.getmembers()}
    assert modes["package/flowproof/flowproof"] & 0o111 == 0o111
    assert "package/flowproof/_internal/base_library.zip" in modes
    assert "package/LICENSE" in modes


def test_both_tarballs_install_offline_and_npx_runs_the_fake_engine(
    project: Path, packed: Packed
) -> None:
    installed = sorted(
        str(path.relative_to(project / "node_modules"))
        for path in (project / "node_modules").glob("**/package.json")
    )
    assert installed == [f"@flowproof/cli-{packed.key}/package.json", "flowproof/package.json"]
    done = subprocess.run(
        ["npx", "--offline", "flowproof", "--version"],
        cwd=project,
        env={**os.environ, **OFFLINE, "npm_config_cache": str(project.parent / "npm-cache")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "flowproof 0.0.0-fake (engine package)\n")


def test_a_version_passed_in_names_both_tarballs_and_manifests(
    tmp_path: Path, platform_key: str
) -> None:
    write_fake_bundle(tmp_path / "bundle")
    result = run_pack("--bundle", "bundle", "--out", "out", "--version", "1.2.3-rc.1", cwd=tmp_path)
    assert result.stdout == (
        f"out/flowproof-1.2.3-rc.1.tgz\nout/flowproof-cli-{platform_key}-1.2.3-rc.1.tgz\n"
    )
    launcher = manifest(tmp_path / "out" / "flowproof-1.2.3-rc.1.tgz")
    engine = manifest(tmp_path / "out" / f"flowproof-cli-{platform_key}-1.2.3-rc.1.tgz")
    assert (launcher["version"], engine["version"]) == ("1.2.3-rc.1", "1.2.3-rc.1")
    assert set(launcher["optionalDependencies"].values()) == {"1.2.3-rc.1"}  # type: ignore[union-attr]


def test_a_symlink_in_the_bundle_stops_the_pack(tmp_path: Path, platform_key: str) -> None:
    bundle = write_fake_bundle(tmp_path / "flowproof")
    os.symlink("base_library.zip", bundle / "_internal" / "libpython.so")
    result = run_pack("--bundle", bundle, "--out", tmp_path / "out", cwd=tmp_path)
    assert result.stderr == (
        f"pack: {bundle} holds 1 symlink(s), which npm pack silently drops "
        "(https://github.com/npm/cli/issues/6744), so the installed engine would break:\n"
        "  _internal/libpython.so -> base_library.zip\n"
        "Replace each with a copy of its target in the build, then pack again.\n"
    )
    assert result.code == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--bundle", "missing"],
            "usage: node npm/scripts/pack.mjs --bundle <onedir folder> "
            "--out <folder> [--version X.Y.Z]",
        ),
        (
            ["--bundle", "missing", "--out", "out"],
            "--bundle {cwd}/missing is not a folder; build the onedir engine first",
        ),
        (
            ["--bundle", "empty", "--out", "out"],
            "{cwd}/empty has no flowproof: is it a flowproof onedir build?",
        ),
        (
            ["--bundle", "bundle", "--out", "out", "--version", "1.0"],
            'version "1.0" is not semver (npm needs X.Y.Z[-pre]); pass --version',
        ),
    ],
)
def test_pack_refuses_bad_input_with_exit_2(
    tmp_path: Path, platform_key: str, args: list[str], message: str
) -> None:
    (tmp_path / "empty").mkdir()
    write_fake_bundle(tmp_path / "bundle")
    result = run_pack(*args, cwd=tmp_path)
    assert (result.code, result.stderr) == (2, f"pack: {message.format(cwd=tmp_path)}\n")

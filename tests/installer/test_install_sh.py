"""installer/install.sh against a release served on loopback: it installs a verified engine,
links it into bin/, and refuses (installing nothing) whatever it cannot verify."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowproof._version import __version__
from installer import build
from tests.conftest import ROOT
from tests.installer.release import ReleaseServer, fake_bundle, publish, publish_file

INSTALLER = ROOT / "installer" / "install.sh"
SHELL = shutil.which("dash") or "/bin/sh"
SHELLS = sorted({path for name in ("dash", "bash", "sh") if (path := shutil.which(name))})
"""Debian's sh is dash; macOS's is bash 3.2 in POSIX mode: the good path runs under each."""

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="install.sh is the installer for Linux and macOS"
)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    return path


@pytest.fixture
def server(site: Path) -> Iterator[ReleaseServer]:
    served = ReleaseServer(site)
    served.start()
    yield served
    served.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def released(tmp_path: Path, site: Path) -> Path:
    """A fake engine of this version published for this machine's target."""
    return publish(site, fake_bundle(tmp_path / "build", __version__), __version__)


def install(
    server: ReleaseServer,
    home: Path,
    stdout: int | None = None,
    shell: str = SHELL,
    **settings: str,
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "FLOWPROOF_DOWNLOAD_URL": server.url,
        **settings,
    }
    return subprocess.run(
        [shell, str(INSTALLER)],
        env=env,
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )


def installed_version(home: Path) -> str:
    done = subprocess.run(
        [str(home / ".flowproof" / "bin" / "flowproof"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_installs_the_verified_engine_and_links_it_into_bin(
    released: Path, server: ReleaseServer, home: Path, shell: str
) -> None:
    done = install(server, home, shell=shell)
    assert done.returncode == 0, done.stderr
    assert "verified SHA-256 of " + released.name in done.stderr
    link = home / ".flowproof" / "bin" / "flowproof"
    assert link.is_symlink()
    assert os.readlink(link) == f"../versions/{__version__}/flowproof/flowproof"
    assert installed_version(home) == f"flowproof {__version__}\n"
    assert server.requested == [f"/v{__version__}/SHA256SUMS", f"/v{__version__}/{released.name}"]
    # not interactive: no rc file is touched, the PATH line is printed instead
    assert sorted(p.name for p in home.iterdir()) == [".flowproof"]
    assert f'export PATH="{home}/.flowproof/bin:$PATH"' in done.stderr


def test_installs_the_real_frozen_engine(tmp_path: Path, site: Path, server: ReleaseServer) -> None:
    archive = ROOT / "dist" / "release" / f"flowproof-{__version__}-{build.host_target()}.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive.relative_to(ROOT)} is not built; `make release-archive` builds it")
    publish_file(site, archive, __version__)
    home = tmp_path / "home"
    home.mkdir()
    done = install(server, home, FLOWPROOF_INSTALL_DIR=str(tmp_path / "opt" / "flowproof"))
    assert done.returncode == 0, done.stderr
    engine = tmp_path / "opt" / "flowproof" / "bin" / "flowproof"
    result = subprocess.run([str(engine), "--version"], capture_output=True, text=True, timeout=60)
    assert result.stdout == f"flowproof {__version__}\n", result.stderr
    matchers = subprocess.run(
        [str(engine), "help-matchers"], capture_output=True, text=True, timeout=60
    )
    assert matchers.returncode == 0 and "equals <value>" in matchers.stdout, matchers.stderr


def test_a_tampered_archive_is_refused_and_nothing_installed(
    released: Path, server: ReleaseServer, home: Path
) -> None:
    with open(released, "r+b") as archive:
        archive.seek(100)
        byte = archive.read(1)
        archive.seek(100)
        archive.write(bytes([byte[0] ^ 0xFF]))
    done = install(server, home)
    assert done.returncode == 1
    assert re.search(
        rf"error: checksum mismatch for {re.escape(released.name)}: expected [0-9a-f]{{64}}, "
        r"got [0-9a-f]{64}; nothing installed",
        done.stderr,
    ), done.stderr
    assert not (home / ".flowproof").exists()


def test_a_missing_sha256sums_is_refused(released: Path, server: ReleaseServer, home: Path) -> None:
    (released.parent / "SHA256SUMS").unlink()
    done = install(server, home)
    assert done.returncode == 1
    assert "SHA256SUMS; refusing to install unverified" in done.stderr
    assert not (home / ".flowproof").exists()
    assert not any(path.endswith(".tar.gz") for path in server.requested)


def test_an_archive_missing_from_sha256sums_is_refused(
    released: Path, server: ReleaseServer, home: Path
) -> None:
    sums = released.parent / "SHA256SUMS"
    sums.write_text(sums.read_text().replace(released.name, "flowproof-other.tar.gz"))
    done = install(server, home)
    assert done.returncode == 1
    assert (
        f"error: SHA256SUMS has no entry for {released.name}; "
        "refusing to install what cannot be verified"
    ) in done.stderr
    assert not (home / ".flowproof").exists()
    assert not any(path.endswith(".tar.gz") for path in server.requested)


def test_without_a_checksum_tool_it_refuses(
    tmp_path: Path, released: Path, server: ReleaseServer, home: Path
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("uname", "tar", "gzip", "mktemp", "awk", "curl", "cut", "grep", "sed", "rm"):
        found = shutil.which(name)
        assert found, name
        (tools / name).symlink_to(found)
    for name in ("getconf", "ldd"):
        if found := shutil.which(name):
            (tools / name).symlink_to(found)
    done = install(server, home, PATH=str(tools))
    assert done.returncode == 1
    assert (
        "error: no SHA-256 tool found (sha256sum, shasum or openssl); refusing to install unverified"
    ) in done.stderr
    assert not (home / ".flowproof").exists()


def test_an_engine_that_does_not_start_as_the_version_is_not_installed(
    tmp_path: Path, site: Path, server: ReleaseServer, home: Path
) -> None:
    publish(site, fake_bundle(tmp_path / "build", "9.9.9"), __version__)
    done = install(server, home)
    assert done.returncode == 1
    assert (
        f"the unpacked engine did not start as 'flowproof {__version__}' (it said: flowproof 9.9.9)"
    ) in done.stderr
    assert list((home / ".flowproof" / "versions").iterdir()) == []
    assert not (home / ".flowproof" / "bin" / "flowproof").exists()


def test_flowproof_version_picks_the_version(
    tmp_path: Path, site: Path, server: ReleaseServer, home: Path, released: Path
) -> None:
    publish(site, fake_bundle(tmp_path / "old", "0.0.9"), "0.0.9")
    done = install(server, home, FLOWPROOF_VERSION="v0.0.9")
    assert done.returncode == 0, done.stderr
    assert installed_version(home) == "flowproof 0.0.9\n"
    assert install(server, home).returncode == 0  # the default: this script's release
    assert installed_version(home) == f"flowproof {__version__}\n"
    assert sorted(p.name for p in (home / ".flowproof" / "versions").iterdir()) == [
        "0.0.9",
        __version__,
    ]


def test_github_path_gets_the_bin_folder(
    tmp_path: Path, released: Path, server: ReleaseServer, home: Path
) -> None:
    github_path = tmp_path / "github_path"
    github_path.write_text("/earlier/entry\n")
    done = install(server, home, GITHUB_PATH=str(github_path))
    assert done.returncode == 0, done.stderr
    assert github_path.read_text() == f"/earlier/entry\n{home}/.flowproof/bin\n"
    assert sorted(p.name for p in home.iterdir()) == [".flowproof"]


def test_plain_http_is_refused_off_loopback(home: Path) -> None:
    done = subprocess.run(
        [SHELL, str(INSTALLER)],
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "FLOWPROOF_DOWNLOAD_URL": "http://mirror.example/flowproof",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert (
        "error: refusing to download from http://mirror.example/flowproof: the URL must be "
        "https:// (plain http only on loopback)"
    ) in done.stderr


def install_in_a_terminal(server: ReleaseServer, home: Path, **settings: str) -> None:
    """stdout on a pseudo-terminal: what an interactive `curl ... | sh` looks like."""
    controller, terminal = pty.openpty()
    try:
        done = install(server, home, stdout=terminal, **settings)
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr


def test_an_interactive_session_adds_one_line_to_the_rc_files(
    released: Path, server: ReleaseServer, home: Path
) -> None:
    (home / ".bashrc").write_text("# mine\n")
    install_in_a_terminal(server, home)
    install_in_a_terminal(server, home)  # idempotent
    line = f'. "{home}/.flowproof/env"'
    assert (home / ".profile").read_text() == f"\n{line}\n"
    assert (home / ".bashrc").read_text() == f"# mine\n\n{line}\n"
    assert not (home / ".zshrc").exists()
    env_script = subprocess.run(
        ["sh", "-c", f'PATH=/usr/bin:/bin; . "{home}/.flowproof/env"; echo "$PATH"'],
        capture_output=True,
        text=True,
    )
    assert env_script.stdout == f"{home}/.flowproof/bin:/usr/bin:/bin\n"


def test_no_modify_path_never_touches_rc_files(
    released: Path, server: ReleaseServer, home: Path
) -> None:
    install_in_a_terminal(server, home, FLOWPROOF_NO_MODIFY_PATH="1")
    assert sorted(p.name for p in home.iterdir()) == [".flowproof"]


def test_the_script_installs_the_version_it_is_released_with() -> None:
    text = INSTALLER.read_text(encoding="utf-8")
    assert f'FLOWPROOF_RELEASED_VERSION="{__version__}"' in text
    assert text.rstrip().endswith('main "$@" || exit 1')


def pretend(tmp_path: Path, **commands: str) -> str:
    """A PATH whose first folder holds shell scripts standing in for `commands` (uname, ldd):
    this machine, as the installer would see another."""
    tools = tmp_path / "pretend"
    tools.mkdir()
    for name, body in commands.items():
        script = tools / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    return f"{tools}{os.pathsep}{os.environ['PATH']}"


ALPINE_UNAME = 'case "$1" in -s) echo Linux ;; -m) echo x86_64 ;; *) echo Linux ;; esac'
# What Alpine's ldd (musl's dynamic loader) prints for --version: on stderr, exit 1.
ALPINE_LDD = 'echo "musl libc (x86_64)" >&2; echo "Version 1.2.5" >&2; exit 1'


def test_musl_is_refused_naming_a_glibc_image_and_nothing_is_downloaded(
    tmp_path: Path, released: Path, server: ReleaseServer, home: Path
) -> None:
    path = pretend(tmp_path, uname=ALPINE_UNAME, ldd=ALPINE_LDD)
    done = install(server, home, PATH=path)
    assert done.returncode == 1
    assert done.stderr == (
        "flowproof-install: error: musl-based Linux (Alpine) is not supported: flowproof is "
        "built against glibc. Use a glibc-based image (Debian, Ubuntu, e.g. python:3.12-slim "
        "or node:24-slim), or install the Python package\n"
    )
    assert server.requested == []
    assert not (home / ".flowproof").exists()


def test_windows_shells_are_pointed_at_wsl(
    tmp_path: Path, released: Path, server: ReleaseServer, home: Path
) -> None:
    path = pretend(tmp_path, uname='echo "MINGW64_NT-10.0-19045"')
    done = install(server, home, PATH=path)
    assert done.returncode == 1
    assert done.stderr == (
        "flowproof-install: error: Windows is not supported yet; run flowproof in WSL (Windows "
        "Subsystem for Linux), where this script installs the Linux build\n"
    )
    assert server.requested == []

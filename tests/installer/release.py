"""A release on loopback for the installer tests: archives laid out as on GitHub releases
(<base>/v<version>/<file>), served by a plain HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import shutil
import stat
import textwrap
import threading
from pathlib import Path

from installer import build

FAKE_ENGINE = textwrap.dedent("""\
    #!/bin/sh
    # Stands in for the onedir executable: like it, it needs its _internal/ folder beside it,
    # which it finds through a symlink (readlink -f), not through a copy.
    here="$(dirname "$(readlink -f "$0")")"
    [ -d "$here/_internal" ] || { echo "Failed to load Python shared library" >&2; exit 255; }
    case "$1" in
        --version) echo "flowproof {version}" ;;
        *) echo "fake flowproof: $*" ;;
    esac
    """)


def fake_bundle(directory: Path, version: str) -> Path:
    """A folder shaped like dist/flowproof: a shell script named flowproof plus _internal/."""
    bundle = directory / "flowproof"
    (bundle / "_internal").mkdir(parents=True)
    (bundle / "_internal" / "base_library.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    engine = bundle / "flowproof"
    engine.write_text(FAKE_ENGINE.replace("{version}", version))
    engine.chmod(engine.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bundle


def publish(site: Path, bundle: Path, version: str) -> Path:
    """Pack `bundle` for this machine's target into site/v<version>/ with its SHA256SUMS."""
    return build.archive(bundle, site / f"v{version}", release_version=version)


def publish_file(site: Path, archive: Path, version: str) -> Path:
    """An already built archive (dist/release/...) into site/v<version>/, with SHA256SUMS."""
    folder = site / f"v{version}"
    folder.mkdir(parents=True, exist_ok=True)
    copied = Path(shutil.copy(archive, folder))
    build.write_sums(folder)
    return copied


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class ReleaseServer:
    """Serves `site` on http://127.0.0.1:<port>; `requested` lists the paths asked for."""

    def __init__(self, site: Path) -> None:
        self.requested: list[str] = []
        requested = self.requested

        class Handler(_Quiet):
            def do_GET(self) -> None:
                requested.append(self.path)
                super().do_GET()

        handler = functools.partial(Handler, directory=str(site))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

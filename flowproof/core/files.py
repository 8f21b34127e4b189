"""The one way flowproof writes a file it leaves behind: atomically.

A temporary file in the same directory, fsynced, then `os.replace`: a crash mid-write leaves the
previous file intact rather than half a trace or half a report (vcrpy's persister opens the
target for writing directly, which is the failure this avoids).

A path flowproof cannot write (a read-only or immutable directory, a directory where the file
should be, a parent that is a file) is bad input, not a crash: a ConfigError naming the path
and the operating system's reason, the previous file untouched.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from flowproof.core.errors import ConfigError


def write_text_atomic(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot_write(path, exc, f"its directory {path.parent} cannot be created") from None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _cannot_write(path, exc, f"no file can be created in {path.parent}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; a committed trace should get the usual umask-based mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(path, exc, "it cannot be replaced") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cannot_write(path: Path, exc: OSError, what: str) -> ConfigError:
    reason = "a file is in the way" if isinstance(exc, FileExistsError) else exc.strerror
    return ConfigError(
        f"cannot write {path}: {what} ({reason}); any previous {path.name} is unchanged"
    )

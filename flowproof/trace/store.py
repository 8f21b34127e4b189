"""Where traces live, and the only code that writes one (atomically, see core/files.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from flowproof.core.errors import TraceError
from flowproof.core.files import write_text_atomic
from flowproof.core.readjson import UnreadableJson, read_json
from flowproof.guards.spellings import appears
from flowproof.trace import codec
from flowproof.trace.model import Trace

TRACE_SUFFIX = ".trace.json"


def trace_path_for(spec_path: Path) -> Path:
    """`specs/booking.yaml` → `specs/booking.trace.json`."""
    return spec_path.with_name(f"{spec_path.stem}{TRACE_SUFFIX}")


def load_trace(path: Path, *, credentials: Mapping[str, str] | None = None) -> Trace:
    """Read a trace, re-checking it for credentials: a scan at write time never reaches a
    trace written by an older flowproof, or edited by hand."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the trace: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TraceError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
            "a trace is written by `flowproof record`: re-record it rather than edit it"
        ) from None
    for name, value in (credentials or {}).items():
        if appears(value, text):
            raise TraceError(
                f"{path}: holds the value of {name}; delete it and re-record "
                "(a trace is committed evidence and must not carry a credential)"
            )
    return codec.decode(text, str(path))


def write_trace(path: Path, trace: Trace, *, secrets: Mapping[str, str] | None = None) -> None:
    """Write atomically, refusing outright if any secret value (`secrets`: variable name →
    value) would reach the file. The refusal names the variable, never the value."""
    text = codec.encode(trace)
    for name, value in (secrets or {}).items():
        if appears(value, text):
            raise TraceError(
                f"{path}: refusing to write a trace that contains the value of {name}; "
                "the previous trace, if any, is unchanged"
            )
    try:  # what record writes, replay must read: an agent's body may hold a NaN, say
        read_json(text)
    except UnreadableJson as exc:
        raise TraceError(
            f"{path}: refusing to write a trace flowproof could not read back ({exc}); "
            "the previous trace, if any, is unchanged"
        ) from None
    write_text_atomic(path, text)

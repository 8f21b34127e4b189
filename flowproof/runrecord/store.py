"""Where run records live, and the only code that writes or reads one.

Records go under `.flowproof/runs/` unless `--runs-dir DIR` or `FLOWPROOF_RUNS_DIR` says
otherwise; `run`, `record`, `report` and `audit` all resolve the directory here.
"""

from __future__ import annotations

import json
import secrets as random
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from flowproof import __version__
from flowproof.errors import RunRecordError
from flowproof.files import write_text_atomic
from flowproof.readjson import read_json
from flowproof.redaction import Redactor
from flowproof.runrecord.migrate import MIGRATIONS
from flowproof.runrecord.model import FORMAT_VERSION, RunRecord

DEFAULT_RUNS_DIR = Path(".flowproof") / "runs"
RUNS_DIR_VARIABLE = "FLOWPROOF_RUNS_DIR"
RECORD_FILE = "report.json"


def runs_dir(given: str | None, environ: Mapping[str, str]) -> Path:
    """`--runs-dir`, else FLOWPROOF_RUNS_DIR, else `.flowproof/runs`."""
    return Path(given or environ.get(RUNS_DIR_VARIABLE) or DEFAULT_RUNS_DIR)


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by time, unique within the second."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%S}Z-{random.token_hex(3)}"


def write_run_record(record: RunRecord, root: Path, redact: Redactor) -> Path:
    """Write atomically, redacted as a whole document first: a secret that reached a reason, a
    reply or an agent's stderr never reaches the disk (nor any report rendered from it)."""
    text = json.dumps(record.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    path = root / record.run_id / RECORD_FILE
    write_text_atomic(path, redact(text))
    return path


def load_run_record(path: Path) -> RunRecord:
    """A run record by its report.json or its directory, migrated to the current format."""
    if path.is_dir():
        path = path / RECORD_FILE
    try:
        document = read_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunRecordError(f"{path}: not a readable run record ({exc})") from None
    return parse_run_record(document, str(path))


def parse_run_record(document: object, source: str) -> RunRecord:
    if not isinstance(document, dict) or "format_version" not in document:
        raise RunRecordError(f"{source}: not a flowproof run record (no format_version)")
    version = document["format_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RunRecordError(
            f"{source}: not a flowproof run record: its format_version is "
            f"{json.dumps(version)}, not a whole number from 1 to {FORMAT_VERSION}"
        )
    if version > FORMAT_VERSION:
        raise RunRecordError(
            f"{source}: written by a newer flowproof (format {version}); upgrade flowproof: "
            f"this one ({__version__}) reads run-record formats up to {FORMAT_VERSION}"
        )
    while version < FORMAT_VERSION:
        document = MIGRATIONS[version](document)
        version = document["format_version"]
    try:
        return RunRecord.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "missing":
            problem = f"no {first['loc'][-1]!r} field"
        else:
            problem = f"{'.'.join(str(part) for part in first['loc'])}: {first['msg']}"
        raise RunRecordError(f"{source}: not a complete flowproof run record: {problem}") from None


def latest_run(root: Path) -> Path:
    runs = sorted(root.glob(f"*/{RECORD_FILE}")) if root.is_dir() else []
    if not runs:
        raise RunRecordError(f"no run records under {root}; run `flowproof run` first")
    return runs[-1]


def run_ids(root: Path) -> list[str]:
    return sorted(p.parent.name for p in root.glob(f"*/{RECORD_FILE}")) if root.is_dir() else []

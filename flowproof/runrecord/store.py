"""Where run records live, and the only code that writes or reads one.

Records go under `.flowproof/runs/` unless `--runs-dir DIR` or `FLOWPROOF_RUNS_DIR` says
otherwise; `run`, `record`, `report` and `audit` all resolve the directory here. `run` and
`record` keep the newest FLOWPROOF_KEEP_RUNS records there (50 unless set) and remove older ones,
so a day of trying things does not leave hundreds of directories behind.
"""

from __future__ import annotations

import json
import secrets as random
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from flowproof._version import __version__
from flowproof.core.errors import ConfigError, RunRecordError
from flowproof.core.files import write_text_atomic
from flowproof.core.readjson import read_json
from flowproof.guards.redaction import Redactor
from flowproof.runrecord.migrate import MIGRATIONS
from flowproof.runrecord.model import FORMAT_VERSION, RunRecord

DEFAULT_RUNS_DIR = Path(".flowproof") / "runs"
RUNS_DIR_VARIABLE = "FLOWPROOF_RUNS_DIR"
RECORD_FILE = "report.json"
KEEP_RUNS_VARIABLE = "FLOWPROOF_KEEP_RUNS"
DEFAULT_KEEP_RUNS = 50


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


def runs_to_keep(environ: Mapping[str, str]) -> int | None:
    """FLOWPROOF_KEEP_RUNS, else 50; None (`0`) keeps every record."""
    text = environ.get(KEEP_RUNS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_KEEP_RUNS
    try:
        keep = int(text)
    except ValueError:
        keep = -1
    if keep < 0:
        raise ConfigError(
            f"{KEEP_RUNS_VARIABLE}={text!r} is not a whole number: set it to how many run "
            f"records to keep (default {DEFAULT_KEEP_RUNS}), or 0 to keep every one"
        )
    return keep or None


def prune_runs(root: Path, keep: int | None, current: str) -> list[str]:
    """Remove all but the newest `keep` run records under `root` (the ids sort by time), never
    `current`, the run that just wrote its record and whose reports are rendered from it. A
    directory with no record yet is a run still going on beside this one: it is left alone."""
    if keep is None:
        return []
    ids = run_ids(root)
    removed = [run_id for run_id in ids[: max(0, len(ids) - keep)] if run_id != current]
    for run_id in removed:
        # A record another process is reading as it goes is only lost to that reader; a
        # directory that will not go (a symlink, permissions) is kept rather than failing a run.
        shutil.rmtree(root / run_id, ignore_errors=True)
    return removed

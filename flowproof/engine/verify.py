"""`flowproof record --verify`: replay a trace just recorded the way tomorrow's CI will.

The project is the directory flowproof was started in (the spec's own directory when the spec
lies outside it), copied without `.flowproof/`, `node_modules/`, virtual environments and
caches. Its `.git/` is copied: a CI checkout has one, and agents read it (Gemini CLI leaves
what git ignores out of the file listing in its first prompt). The copy is replayed by this
engine, started afresh (`flowproof run` in the copy, its run records where a checkout keeps
them), with a new HOME and TMPDIR, a TZ whose local date is neither today's UTC date nor this
machine's, and no upstream or key. A replay stops at its first divergence, so the divergence is
classified (matching/remedy.py, told which directories moved), its declaration is made in the
copy (for a `normalize:` fact the copied trace is rewritten as a record with the entry would
have written it), and the copy is replayed again, up to `MAX_ROUNDS` times. A difference that
no declaration answers, or a tool's output (its `result:` changes what is recorded), ends the
search: the trace must be recorded again first.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from flowproof.core.files import write_text_atomic
from flowproof.core.lanes import MODEL_LANE
from flowproof.engine.environment import measure
from flowproof.engine.replayability import Finding, Sighting, declare_lines
from flowproof.engine.workdir import agent_cwd
from flowproof.guards.redaction import record_keys
from flowproof.host.engine_argv import engine_argv
from flowproof.host.environ import host_environ
from flowproof.matching.divergence import Divergence
from flowproof.matching.normalize import OPT_OUT, Environment, Normalizer
from flowproof.matching.remedy import Remedy, classify
from flowproof.runrecord.store import DEFAULT_RUNS_DIR, load_run_record
from flowproof.spec.load import load_spec
from flowproof.spec.suite import find_suite
from flowproof.trace.model import Lane, Trace
from flowproof.trace.store import load_trace, trace_path_for, write_trace

MAX_ROUNDS = 8
"""Replays per verified flow at most: one when the trace replays, one more per fix found."""
LEFT_OUT = frozenset((".flowproof", "node_modules", ".venv", "venv", "__pycache__"))
"""Directories not copied: flowproof's runs, installed dependencies, caches."""
UPSTREAM_VARIABLES = ("FLOWPROOF_AGENT_UPSTREAM", "FLOWPROOF_AGENT_KEY", "GITHUB_ACTIONS")
"""Taken out of the replay's environment: no upstream, no key, no runner annotations."""
LABELS = {
    "cwd": "the working directory moved",
    "home": "the home directory changed",
    "tmpdir": "the temporary directory changed",
    "date": "the date changed",
}
REPLAY_TIMEOUT = 900.0


@dataclass(frozen=True, slots=True)
class Tomorrow:
    """The conditions the copy is replayed under."""

    zone: str
    """An IANA zone with a fixed offset (`Etc/GMT-14`: 14 hours ahead of UTC; the sign of an
    `Etc/GMT` name is the POSIX one, reversed). Not a bare POSIX TZ string: Node's ICU reads
    one it does not know as UTC, so an agent on Node would print today's date."""
    local_date: str


@dataclass(frozen=True, slots=True)
class FailedReplay:
    """How one replay of the copy failed: at a divergence, or for reasons without one (the
    copy could not be opened, an assertion failed, the engine did not run)."""

    divergence: Divergence | None
    reasons: tuple[str, ...] = ()

    @property
    def why(self) -> str:
        return self.divergence.text if self.divergence else "; ".join(self.reasons)


@dataclass(slots=True)
class Verification:
    """What verifying one flow found."""

    spec: Path
    tomorrow: Tomorrow
    findings: list[Finding] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    """Tools whose output differed between the runs: each wants a `result:`."""
    normalized: tuple[str, ...] = ()
    """The spec's own `normalize:` entries, kept in the printed line."""
    ignored: tuple[str, ...] = ()
    """The spec's own `ignore_fields:` entries, kept in the printed line."""
    unexplained: str = ""
    """Why the replay failed when no declaration answers it."""

    @property
    def passed(self) -> bool:
        return not (self.findings or self.tools or self.unexplained)

    def render(self) -> list[str]:
        head = (
            f"verify {self.spec}: replayed from a copy at another path with a fresh HOME and "
            f"TMPDIR, TZ={self.tomorrow.zone} (local date {self.tomorrow.local_date}) and no "
            "upstream"
        )
        if self.passed:
            return [f"{head}: it replays"]
        lines = [f"{head}: it would not replay:"]
        for finding in self.findings:
            lines += finding.render()
        lines += [f"  the output of tool {tool} differs between runs" for tool in self.tools]
        if self.unexplained:
            lines.append(f"  not answered by a declaration: {self.unexplained}")
        # The spec's own entries come first, so each printed line replaces the spec's whole;
        # an opt-out (`no-cwd`) of a fact found moved is what the line takes back.
        restored = {OPT_OUT + f.normalize for f in self.findings if f.normalize}
        kept = [Finding("", (), normalize=e) for e in self.normalized if e not in restored]
        kept += [Finding("", (), ignore_field=entry) for entry in self.ignored]
        lines += declare_lines([*kept, *self.findings], self.tools)
        if self.tools:
            lines.append("then record again: the trace holds each output as it was recorded")
        return lines


def tomorrow(now: datetime) -> Tomorrow:
    """A zone 14 hours ahead of UTC or 12 behind, with a date other than today's both in UTC
    and in this machine's zone (`now` is aware, in the machine's zone); where both zones share
    a date with one of them, the one whose date differs from the machine's, since that is the
    date an agent prints."""
    utc = now.astimezone(UTC)
    candidates = [
        Tomorrow(zone, (utc + timedelta(hours=hours)).date().isoformat())
        for zone, hours in (("Etc/GMT-14", 14), ("Etc/GMT+12", -12))
    ]
    local = now.date().isoformat()
    for candidate in candidates:
        if candidate.local_date not in (local, utc.date().isoformat()):
            return candidate
    return next(c for c in candidates if c.local_date != local)


def verify_flow(spec: Path, environ: Mapping[str, str], started_in: Path) -> Verification:
    """Replay the trace of `spec` (just recorded) from a copy under tomorrow's conditions."""
    now = datetime.now().astimezone()
    loaded = load_spec(spec)
    suite = find_suite(spec, started_in)
    recorded_env = measure(loaded, suite, environ, now)
    # Where the spec lies, its folders resolved but not the spec itself: a spec that is a
    # symbolic link has its trace beside the link (trace/store.py), where record wrote it.
    located = spec.parent.resolve() / spec.name
    project = started_in if located.is_relative_to(started_in.resolve()) else spec.parent
    when = tomorrow(now)
    found = Verification(
        spec,
        when,
        normalized=tuple(loaded.spec.normalize),
        ignored=tuple(loaded.spec.ignore_fields),
    )
    with tempfile.TemporaryDirectory(prefix="flowproof-verify-") as scratch:
        root = Path(scratch)
        copy = root / "checkout" / project.resolve().name
        shutil.copytree(project, copy, symlinks=True, ignore=_left_out)
        copied_spec = copy / located.relative_to(project.resolve())
        env = _replay_environ(environ, root, when)
        moved = _moved(recorded_env, copied_spec, env)
        keys = record_keys(environ)
        for _ in range(MAX_ROUNDS):
            failed = _replay(copied_spec, copy, root, env)
            if failed is None:
                return found
            if not _answer(failed, _Copy(copied_spec, keys), recorded_env, moved, found):
                return found
    found.unexplained = found.unexplained or f"still diverging after {MAX_ROUNDS} replays"
    return found


def _left_out(directory: str, names: Sequence[str]) -> set[str]:
    return {name for name in names if name in LEFT_OUT}


def _replay_environ(environ: Mapping[str, str], root: Path, when: Tomorrow) -> dict[str, str]:
    home, tmp = root / "home", root / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in host_environ(environ).items() if k not in UPSTREAM_VARIABLES}
    return {**env, "HOME": str(home), "TMPDIR": str(tmp), "TZ": when.zone}


def _moved(
    recorded: Environment, copied_spec: Path, env: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """Each directory fact: (its spelling at record, its spelling in the copy's replay)."""
    cwd = agent_cwd(load_spec(copied_spec), env) or copied_spec.parent
    return {
        "cwd": (recorded.cwd[0], str(cwd.resolve())),
        "home": (recorded.home[0], env["HOME"]),
        "tmpdir": (recorded.tmpdir[0], env["TMPDIR"]),
    }


def _replay(spec: Path, copy: Path, root: Path, env: Mapping[str, str]) -> FailedReplay | None:
    """The copy replayed once: None when it passed, else how its flow failed, read from the
    run record the replay wrote."""
    # Where a CI checkout keeps them, since an agent that lists the project sees the folder.
    runs = copy / DEFAULT_RUNS_DIR
    shutil.rmtree(runs, ignore_errors=True)
    argv = [*engine_argv(), "run", str(spec.relative_to(copy)), "--runs-dir", str(runs)]
    done = subprocess.run(
        argv, cwd=copy, env=dict(env), capture_output=True, text=True, timeout=REPLAY_TIMEOUT
    )
    if done.returncode == 0:
        return None
    reports = sorted(runs.glob("*/report.json"))
    if not reports:
        last = done.stderr.strip().splitlines()[-1:] or ["the replay did not run"]
        return FailedReplay(None, tuple(last))
    record = load_run_record(reports[-1])
    if not record.flows:
        # A copy that cannot even be opened (an `agent.cwd` outside the project) is an error.
        errors = [error.message for error in record.errors]
        return FailedReplay(None, tuple(errors or ["no flow was run"]))
    flow = record.flows[0]
    if flow.divergence is not None:
        return FailedReplay(flow.divergence)
    return FailedReplay(None, tuple(flow.reasons or ["the replay failed"]))


@dataclass(frozen=True, slots=True)
class _Copy:
    """The copied spec verify declares in, and the keys its trace must never hold."""

    spec: Path
    keys: Mapping[str, str]

    @property
    def trace_path(self) -> Path:
        return trace_path_for(self.spec)

    def trace(self) -> Trace:
        """The copy's trace, through the store: migrated from an older format, refused when
        it cannot be read or holds a record key."""
        return load_trace(self.trace_path, credentials=self.keys)


def _answer(
    failed: FailedReplay,
    copy: _Copy,
    recorded_env: Environment,
    moved: Mapping[str, tuple[str, str]],
    found: Verification,
) -> bool:
    """Classify the divergence, note it, and declare its answer in the copy; False when the
    search ends here (nothing to declare, or a declaration that needs a new recording)."""
    divergence = failed.divergence
    if divergence is None or divergence.lane != MODEL_LANE or not divergence.path:
        found.unexplained = failed.why
        return False
    path = divergence.path
    recorded_body = _recorded_request(copy, divergence.recorded_index)
    remedy = classify(path, divergence.recorded, divergence.replayed, moved, recorded_body)
    if remedy is None:
        found.unexplained = divergence.text
        return False
    if remedy.tool:
        found.tools.append(remedy.tool)
        return False
    sighting = Sighting(divergence.index, path, remedy.seen)
    label = LABELS.get(remedy.kind, f"a per-run id at {path}")
    found.findings.append(
        Finding(label, (sighting,), remedy.normalize, remedy.ignore_field, remedy.why_not)
    )
    if remedy.why_not:
        return False
    _declare_in_copy(copy, remedy, recorded_env)
    return True


def _recorded_request(copy: _Copy, number: int | None) -> Any:
    if number is None:
        return None
    turns = copy.trace().turns
    return turns[number - 1].request if 0 < number <= len(turns) else None


def _declare_in_copy(copy: _Copy, remedy: Remedy, recorded_env: Environment) -> None:
    """Add the remedy's entry to the copied spec; for a `normalize:` fact, also rewrite the
    copied trace as a record with that entry would have written it. Both are written
    atomically, so a file of the copy that is a symbolic link is replaced in the copy, never
    written through to what it points at (the project's own spec or trace)."""
    document = yaml.safe_load(copy.spec.read_text(encoding="utf-8"))
    key, entry = (
        ("normalize", remedy.normalize)
        if remedy.normalize
        else ("ignore_fields", remedy.ignore_field)
    )
    declared = [item for item in document.get(key) or [] if item != OPT_OUT + str(entry)]
    document[key] = [*declared, entry]
    write_text_atomic(copy.spec, yaml.safe_dump(document, sort_keys=False))
    if remedy.normalize:
        normalizer = Normalizer.build([remedy.normalize], recorded_env)
        trace = copy.trace()
        lanes = tuple(_with_placeholders(lane, normalizer) for lane in trace.lanes)
        write_trace(copy.trace_path, replace(trace, lanes=lanes), secrets=copy.keys)


def _with_placeholders(lane: Lane, normalizer: Normalizer) -> Lane:
    """The model lane's bodies as record stores them with the normalizer in place
    (proxy/forward.py); the other lanes as they are, since record normalises none."""
    if lane.name != MODEL_LANE:
        return lane
    turns = tuple(
        replace(
            turn,
            request=normalizer.to_placeholders(turn.request),
            response=normalizer.to_placeholders(turn.response),
        )
        for turn in lane.entries
    )
    return replace(lane, entries=turns)

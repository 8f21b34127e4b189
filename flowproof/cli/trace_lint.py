"""`flowproof trace lint [PATH...]`: the CI gate on what must never be committed in a trace.

Every `*.trace.json` under the paths (default: specs/) is scanned (flowproof/trace/lint.py),
with the patterns and reviewed exceptions of the nearest `flowproof.yaml` and the values of the
variables its spec's `assert_no_secret_leak` declares, when they are set. A trace beside no
spec (an orphan nobody replays) is a finding too; a spec without a trace is reported, not
counted (`run` fails it anyway). Exit 0 clean, 1 on findings, 2 when a file cannot be read.
With `--json`, the findings are also one document on stdout (docs/schemas/trace-lint.schema.json).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from flowproof.assertions.secrets import SecretLeakAssertion
from flowproof.cli.output import emit, json_wanted, out
from flowproof.core.errors import EXIT_FAILED, EXIT_PASSED, ConfigError
from flowproof.core.words import plural
from flowproof.spec.load import load_spec
from flowproof.spec.suite import SPEC_SUFFIXES, find_suite, is_spec_file, refuse_shared_trace
from flowproof.trace.lint import Finding, lint_lanes, rules_for
from flowproof.trace.store import TRACE_SUFFIX, load_trace, trace_path_for

DEFAULT_PATH = "specs"


def lint_command(paths: tuple[str, ...]) -> None:
    roots = [Path(p) for p in paths or (DEFAULT_PATH,)]
    for root in roots:
        if not root.exists():
            raise ConfigError(f"{root}: no such file or directory")
    traces = sorted(
        {t for r in roots for t in ([r] if r.is_file() else r.rglob(f"*{TRACE_SUFFIX}"))}
    )
    findings: list[Finding] = []
    for trace in traces:
        findings += _lint_one(trace)
    specs = sorted(
        {s for root in roots if root.is_dir() for s in root.rglob("*.y*ml") if is_spec_file(s)}
    )
    without = [spec for spec in specs if not trace_path_for(spec).exists()]
    for finding in findings:
        out(finding.render())
    for spec in without:
        out(f"note: {spec} has no trace yet; `flowproof record {spec}` writes it")
    count = len(findings)
    shown = f"{plural(len(traces), 'trace')}, {plural(count, 'finding')}"
    out(f"\ntrace lint: {shown}")
    exit_code = EXIT_FAILED if findings else EXIT_PASSED
    if json_wanted():
        from flowproof.documents.lint import lint_document

        emit(lint_document(traces, findings, without, exit_code))
    sys.exit(exit_code)


def _lint_one(trace: Path) -> list[Finding]:
    spec = _spec_of(trace)
    if spec is None:
        return [Finding(str(trace), "(file)", "an orphan trace: no spec beside it replays it")]
    refuse_shared_trace(spec)
    loaded = load_spec(spec)
    suite = find_suite(spec, Path.cwd())
    secrets = {
        name: os.environ[name]
        for step in loaded.assertions
        if isinstance(step.assertion, SecretLeakAssertion)
        for name in step.assertion.names
        if os.environ.get(name)
    }
    rules = rules_for(suite.settings if suite else None, secrets)
    return lint_lanes(str(trace), load_trace(trace).lanes, rules)


def _spec_of(trace: Path) -> Path | None:
    stem = trace.name[: -len(TRACE_SUFFIX)]
    for suffix in SPEC_SUFFIXES:
        candidate = trace.with_name(stem + suffix)
        if candidate.is_file():
            return candidate
    return None

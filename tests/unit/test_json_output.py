"""`--json`: the committed schemas are the generated ones, the documents the builders make
validate against them, and stdout holds one redacted document and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest

from flowproof.cli import output
from flowproof.cli.schemas import DOCUMENTS, render_schema
from flowproof.core.errors import ConfigError, SpecError
from flowproof.documents.error import error_document
from flowproof.documents.report import report_document
from flowproof.guards.redaction import Redactor
from flowproof.runrecord.store import parse_run_record
from tests.unit.report.builders import golden_record

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"


def committed(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    return loaded


@pytest.fixture(autouse=True)
def plain_stdout() -> Iterator[None]:
    """The mode is the process's: every test starts, and leaves, without --json."""
    output.use_json(False)
    yield
    output.use_json(False)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_committed_schema_is_current(name: str) -> None:
    assert (SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8") == render_schema(name), (
        f"docs/schemas/{name}.schema.json is stale: regenerate it with "
        f"`python -m flowproof.cli.schemas {name} > docs/schemas/{name}.schema.json`"
    )


def test_the_module_prints_a_schema_and_refuses_an_unknown_name() -> None:
    def schemas(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "flowproof.cli.schemas", *args]
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT)

    done = schemas("doctor")
    assert done.returncode == 0 and done.stdout == render_schema("doctor")
    unknown = schemas("audit")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "usage: python -m flowproof.cli.schemas" in unknown.stderr


def test_an_error_document_names_the_file_and_line_of_a_spec_error() -> None:
    error = SpecError("specs/a.yaml", 4, "unknown key 'comand'", "did you mean 'command'?")
    document = error_document("config", error, 2)
    jsonschema.validate(document, committed("error"))
    assert document == {
        "error": {
            "kind": "config",
            "type": "SpecError",
            "message": "specs/a.yaml:4: unknown key 'comand'; did you mean 'command'?",
            "file": "specs/a.yaml",
            "line": 4,
            "exit_code": 2,
            "traceback": None,
        }
    }


def test_a_usage_error_document_carries_clicks_message_not_its_usage_text() -> None:
    document = error_document("usage", click.UsageError("give one RUN"), 2)
    jsonschema.validate(document, committed("error"))
    assert document["error"]["message"] == "give one RUN"
    assert document["error"]["type"] == "UsageError"


def test_the_error_schema_refuses_an_unknown_kind() -> None:
    document = error_document("config", ConfigError("no specs"), 2)
    document["error"]["kind"] = "oops"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, committed("error"))


def test_a_report_document_counts_the_run_and_validates() -> None:
    record = parse_run_record(golden_record(), "report.json")
    document = report_document(record, [Path("a/report.json")], [("html", "out.html")])
    jsonschema.validate(document, committed("report"))
    assert document["written"] == [{"kind": "html", "path": "out.html"}]
    assert document["flows"] == {"passed": 1, "failed": 2, "interrupted": 0, "not_run": 1}
    assert document["merged"] is False


def test_emit_writes_one_redacted_line_on_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "REDACT", Redactor({"JSON_TEST_SECRET": "hunter2-json-secret"}))
    output.use_json(True)
    output.emit({"reply": "the password is hunter2-json-secret", "lines": "a\n::error::x"})
    written = capsys.readouterr()
    assert written.err == ""
    assert written.out.count("\n") == 1  # one line: a line break inside a string is escaped
    assert json.loads(written.out) == {
        "reply": "the password is [redacted JSON_TEST_SECRET]",
        "lines": "a\n::error::x",
    }
    assert output.emitted()


def test_a_second_document_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    output.use_json(True)
    output.emit({})
    with pytest.raises(RuntimeError, match="emitted twice"):
        output.emit({})
    assert capsys.readouterr().out == "{}\n"


def test_workflow_commands_move_to_stderr_under_json(capsys: pytest.CaptureFixture[str]) -> None:
    output.annotate_error("specs/a.yaml", 3, "failed")
    plain = capsys.readouterr()
    assert plain.out == "::error file=specs/a.yaml,line=3::failed\n" and plain.err == ""
    output.use_json(True)
    output.annotate_error("specs/a.yaml", 3, "failed")
    under_json = capsys.readouterr()
    assert under_json.out == "" and under_json.err == "::error file=specs/a.yaml,line=3::failed\n"


@pytest.mark.parametrize(("flag", "loaded"), [((), False), (("--json",), True)])
def test_the_documents_load_only_under_json(
    tmp_path: Path, flag: tuple[str, ...], loaded: bool
) -> None:
    """A command without --json never builds a document: no schema models, no jsonschema."""
    probe = (
        "import sys\nfrom flowproof.cli import main\n"
        f"try:\n    main(['trace', 'lint', {str(tmp_path)!r}, *{flag!r}])\n"
        "except SystemExit:\n    pass\n"
        "print('LOADED', [m for m in ('flowproof.documents.lint', 'jsonschema') "
        "if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    expected = ["flowproof.documents.lint"] if loaded else []
    assert done.stdout.splitlines()[-1] == f"LOADED {expected}", done.stdout + done.stderr

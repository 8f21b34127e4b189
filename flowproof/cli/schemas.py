"""docs/schemas/<NAME>.schema.json for the `--json` documents of doctor, trace lint, report and
of a command's error, generated from their models (documents/), as the run record's is
(runrecord/schema.py):

    for name in doctor trace-lint report error; do
        python -m flowproof.cli.schemas $name > docs/schemas/$name.schema.json
    done

A unit test fails when a committed schema differs from what this renders.
"""

from __future__ import annotations

import json
import sys

from flowproof.documents.doctor import DoctorDocument
from flowproof.documents.error import ErrorDocument
from flowproof.documents.lint import LintDocument
from flowproof.documents.report import ReportDocument
from flowproof.runrecord.base import RecordModel, documented

DOCUMENTS: dict[str, type[RecordModel]] = {
    "doctor": DoctorDocument,
    "trace-lint": LintDocument,
    "report": ReportDocument,
    "error": ErrorDocument,
}
"""Each schema's name (its file is docs/schemas/<name>.schema.json) → the model it documents."""


def schema_id(name: str) -> str:
    return f"https://flowproof.dev/schemas/{name}.schema.json"


def render_schema(name: str) -> str:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id(name),
        **documented(DOCUMENTS[name]).model_json_schema(),
    }
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in DOCUMENTS:
        print(f"usage: python -m flowproof.cli.schemas {{{','.join(DOCUMENTS)}}}", file=sys.stderr)
        return 2
    sys.stdout.write(render_schema(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""docs/schemas/run-record.schema.json, generated from the run record's model.

    python -m flowproof.runrecord.schema > docs/schemas/run-record.schema.json

A unit test fails when the committed schema differs from what this renders, and the end-to-end
tests validate every run record they write against the committed file.
"""

from __future__ import annotations

import json
import sys

from flowproof.runrecord.base import documented
from flowproof.runrecord.model import FORMAT_VERSION, RunRecord

SCHEMA_ID = "https://flowproof.dev/schemas/run-record.schema.json"


def render_schema() -> str:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **documented(RunRecord).model_json_schema(),
    }
    schema["description"] = (
        f"A flowproof run record (report.json), format {FORMAT_VERSION}. "
        + str(schema.get("description", ""))
    ).strip()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_schema())

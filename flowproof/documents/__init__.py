"""The JSON documents `--json` prints for `doctor`, `trace lint`, `report` and for a command that
ended in an error; `run` and `record` print their run record (runrecord/model.py).

Each document is a model here, documented by the docstrings under its fields as the run record
is, and its JSON schema is generated from it (`python -m flowproof.cli.schemas NAME`) and
committed as docs/schemas/<NAME>.schema.json; a unit test keeps the committed files current.
Loaded only under `--json`: a command without it never builds these models.

The builders take what the command already computed for its human text, so both say the same.
"""

"""Every trace format flowproof ever wrote keeps replaying; a newer or unreadable one is refused
with exit 2, naming the file and what to do."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from flowproof._version import __version__
from tests.conftest import ROOT, flowproof

V1 = ROOT / "tests" / "data" / "traces" / "v1"
FIXTURES = sorted(path.name.removesuffix(".trace.json") for path in V1.glob("*.trace.json"))


def install(project: Path, fixture: str) -> Path:
    """specs/flow.yaml (the template filled in) beside the fixture trace, untouched."""
    specs = project / "specs"
    specs.mkdir(parents=True)
    template = (V1 / f"{fixture}.yaml").read_text()
    spec = specs / "flow.yaml"
    spec.write_text(template.format(python=sys.executable, root=ROOT))
    shutil.copyfile(V1 / f"{fixture}.trace.json", specs / "flow.trace.json")
    return spec


def test_there_is_a_fixture_per_dialect() -> None:
    dialects = {
        json.loads((V1 / f"{f}.trace.json").read_text())["turns"][0]["dialect"] for f in FIXTURES
    }
    assert dialects == {"openai_chat", "openai_responses", "anthropic_messages"}


@pytest.mark.parametrize("fixture", FIXTURES)
def test_a_format_1_trace_replays_green(tmp_path: Path, fixture: str) -> None:
    install(tmp_path, fixture)
    before = (tmp_path / "specs" / "flow.trace.json").read_bytes()
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    turns = len(json.loads(before)["turns"])
    assert f"{turns} of {turns} turns served" in result.stderr
    assert (tmp_path / "specs" / "flow.trace.json").read_bytes() == before  # replay never writes


def test_a_trace_from_a_newer_flowproof_is_refused_naming_both_versions(tmp_path: Path) -> None:
    install(tmp_path, FIXTURES[0])
    trace = tmp_path / "specs" / "flow.trace.json"
    trace.write_text(json.dumps({"format_version": 7, "lanes": {}}))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2, result.output
    assert (
        f"{Path('specs') / 'flow.trace.json'}: this trace was written by a newer flowproof "
        f"(format 7); upgrade flowproof: this one ({__version__}) reads trace formats up to 6"
    ) in result.stderr
    assert "Traceback" not in result.output


def test_a_latin_1_trace_is_refused_naming_the_file(tmp_path: Path) -> None:
    install(tmp_path, FIXTURES[0])
    trace = tmp_path / "specs" / "flow.trace.json"
    trace.write_bytes(trace.read_text().replace("Nairobi", "Nairöbi", 1).encode("latin-1"))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2, result.output
    assert f"{Path('specs') / 'flow.trace.json'}: not UTF-8 text (byte 0xf6 at offset " in (
        result.stderr
    )
    assert "re-record it rather than edit it" in result.stderr
    assert "Traceback" not in result.output


def test_a_format_1_trace_without_its_turns_is_malformed_not_empty(tmp_path: Path) -> None:
    install(tmp_path, FIXTURES[0])
    trace = tmp_path / "specs" / "flow.trace.json"
    document = json.loads(trace.read_text())
    del document["turns"]
    trace.write_text(json.dumps(document))
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 2, result.output
    assert (
        f"{Path('specs') / 'flow.trace.json'}: malformed trace: the trace has no 'turns' field; "
        "re-record it with `flowproof record`"
    ) in result.stderr
    assert "Traceback" not in result.output

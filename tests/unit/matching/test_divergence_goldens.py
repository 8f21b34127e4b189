"""Golden divergence messages for the three dialects: tests/data/divergences/*.txt.

Each case is rendered the way proxy/replay.py renders a divergence (`explain` against the
recorded turn, `extra_call` past the last one). The file format is described in the folder's
README; FLOWPROOF_REGENERATE_GOLDEN=1 rewrites every `# output` section from the code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flowproof.dialects import dialect_named
from flowproof.matching.divergence import Divergence, explain, extra_call
from flowproof.matching.match import TurnMatcher
from flowproof.trace.model import Turn
from tests.golden import REGENERATE, assert_same_text

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "data" / "divergences"
SECTIONS = ("# recorded", "# replayed", "# output")
DIALECTS = ("openai_chat", "anthropic_messages", "openai_responses")


@dataclass(frozen=True)
class Case:
    header: dict[str, str]
    sections: dict[str, str]

    @property
    def dialect(self) -> str:
        return self.header["dialect"]

    def body(self, section: str) -> Any:
        return json.loads(self.sections[section])


def read_case(path: Path) -> Case:
    header: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line in SECTIONS:
            current = sections.setdefault(line, [])
        elif current is not None:
            current.append(line)
        elif line.strip():
            key, _, value = line.partition(":")
            header[key.strip()] = value.strip()
    return Case(header, {name: "\n".join(lines) for name, lines in sections.items()})


def render(case: Case) -> Divergence:
    dialect = dialect_named(case.dialect)
    assert dialect is not None, f"unknown dialect {case.dialect!r}"
    replayed = case.body("# replayed")
    index = int(case.header.get("request", "2"))
    if "extra call after" in case.header:
        return extra_call(index, int(case.header["extra call after"]))
    recorded_dialect = case.header.get("recorded dialect", case.dialect)
    recorded = case.body("# recorded")
    # The case must be a real divergence: the recorded turn does not serve the request.
    matcher = TurnMatcher([Turn(recorded_dialect, recorded, {})])
    assert matcher.claim(dialect.name, replayed) is None, "the recorded turn serves this request"
    turn = int(case.header.get("recorded turn", str(index)))
    return explain(index, turn - 1, recorded_dialect, recorded, dialect, replayed)


def rewrite_output(path: Path, output: str) -> None:
    text = path.read_text(encoding="utf-8")
    head, found, _ = text.partition("\n# output\n")
    assert found, f"{path.name} has no # output section"
    path.write_text(f"{head}\n# output\n{output}\n", encoding="utf-8")


CASE_FILES = sorted(CASES.glob("*.txt"))


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda path: path.stem)
def test_golden(path: Path) -> None:
    actual = render(read_case(path)).render() + "\n"
    if REGENERATE:
        rewrite_output(path, actual.rstrip("\n"))
    expected = read_case(path).sections.get("# output", "") + "\n"
    assert_same_text(
        expected,
        actual,
        source=str(path.relative_to(ROOT)),
        problem=f"{path.name} renders differently (FLOWPROOF_REGENERATE_GOLDEN=1 rewrites it; "
        "review the diff first)",
    )


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "kind", ["tool_argument", "system_prompt", "added_tool", "messages", "model"]
)
def test_every_dialect_has_the_core_cases(dialect: str, kind: str) -> None:
    path = CASES / f"{dialect}_{kind}.txt"
    assert path in CASE_FILES and read_case(path).dialect == dialect


def test_the_one_off_cases_are_there() -> None:
    names = {path.stem for path in CASE_FILES}
    assert {"key_order", "same_json_different_bytes", "dialect_mismatch", "extra_call"} <= names

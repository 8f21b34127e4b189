import re
import subprocess
import sys
from pathlib import Path

import pytest

from flowproof.assertions.docgen import render_matchers_help, render_steps_reference
from flowproof.assertions.grammar import ToolCallAssertion
from flowproof.assertions.kinds import StepKind, parse_step, step_kinds
from flowproof.assertions.matchers import Matcher, registry
from flowproof.spec.load import CONVERSATION, PROMPT, TURN_KEYS
from flowproof.spec.model import AgentSpec, FlowSpec, ToolSpec

ROOT = Path(__file__).parents[3]
STEPS_MD = ROOT / "docs" / "steps.md"


def test_docs_steps_md_is_current() -> None:
    assert STEPS_MD.read_text(encoding="utf-8") == render_steps_reference(), (
        "docs/steps.md is stale; run python -m flowproof.assertions.docgen > docs/steps.md"
    )


@pytest.mark.parametrize("matcher", registry(), ids=lambda m: m.name)
def test_every_matcher_is_documented_with_an_example_that_parses(matcher: type[Matcher]) -> None:
    page = render_steps_reference()
    assert f"### {matcher.name}" in page
    assert f"- {matcher.example}\n" in page
    kind, _, text = matcher.example.partition(": ")
    assertion = parse_step(kind, text)
    assert isinstance(assertion, ToolCallAssertion)
    assert [clause.matcher for clause in assertion.clauses] == [matcher]


def test_the_tool_results_section_is_there() -> None:
    assert "\n## Tool results: result and results\n" in render_steps_reference()


def test_running_the_module_prints_the_page() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "flowproof.assertions.docgen"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed == render_steps_reference()


def test_matchers_help_lists_every_matcher() -> None:
    assert render_matchers_help() == (
        "Matchers for `where <path> <matcher> [<value>]` clauses:\n"
        "\n"
        "  equals <value>   (also: is)\n"
        "      the value is exactly the text (strings as text; numbers, booleans, null as JSON)\n"
        "      e.g. assert_tool_call: create_booking where flight.id equals KQ311\n"
        "\n"
        "  contains <value>\n"
        "      a substring of a string, an element of a list, or a key of an object\n"
        "      e.g. assert_tool_call: create_booking where passenger.name contains Casey\n"
        "\n"
        "  matches <value>\n"
        "      a regular expression found anywhere in the value (re.search)\n"
        "      e.g. assert_tool_call: book_seat where seat matches ^[0-9]+[A-F]$\n"
        "\n"
        "  exists\n"
        "      the path is present (a key holding null counts as present)\n"
        "      e.g. assert_tool_call: create_booking where idempotency_key exists\n"
        "\n"
        "  is absent   (also: is missing)\n"
        "      the path is not present (a key holding null is present, so not absent)\n"
        "      e.g. assert_tool_call: search_flights where return_date is absent\n"
    )


def _spec_keys() -> set[str]:
    """Every key the loader accepts: the spec models' fields, the step keys and a
    conversation turn's keys."""
    models = [FlowSpec, AgentSpec, ToolSpec]
    return {name for model in models for name in model.model_fields} | {
        PROMPT,
        CONVERSATION,
        *TURN_KEYS,
        *(kind.name for kind in step_kinds()),
    }


def test_the_page_mentions_only_keys_the_loader_accepts() -> None:
    page = render_steps_reference()
    # `key:` in prose, and `key:` at the start of a YAML or step line.
    mentioned = set(re.findall(r"`([a-z_]+):", page))
    mentioned |= set(re.findall(r"^[ \-]*([a-z_]+):", page, re.MULTILINE))
    assert mentioned, "the pattern found no keys at all"
    assert mentioned <= _spec_keys(), mentioned - _spec_keys()
    assert "mcp" not in page


@pytest.mark.parametrize("kind", step_kinds(), ids=lambda k: k.name)
def test_every_step_kind_has_its_section(kind: type[StepKind]) -> None:
    page = render_steps_reference()
    heading = kind.docs.splitlines()[0]
    assert f"\n{heading}\n" in page
    assert "<<" not in page, "an example placeholder was left unrendered"

"""Reports from a run record: golden PR comment and JUnit, schema validity, truncation, escaping."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import xmlschema

from flowproof.core.errors import RunRecordError
from flowproof.report import render
from flowproof.report.render import COMMENT_LIMIT
from flowproof.runrecord.model import RunRecord
from flowproof.runrecord.store import parse_run_record
from tests.golden import REGENERATE, assert_same_text
from tests.unit.report.builders import (
    DIVERGENCE_DETAIL,
    RUN_ID,
    golden_record,
    make_flow,
    make_record,
    make_step,
    make_turn,
)


def typed(document: dict) -> RunRecord:
    """The record as `flowproof report` reads it from report.json."""
    return parse_run_record(document, "report.json")


def render_html(document: dict) -> str:
    return render.render_html(typed(document))


def render_markdown(document: dict, limit: int = COMMENT_LIMIT) -> str:
    return render.render_markdown(typed(document), limit)


def render_junit(document: dict) -> str:
    return render.render_junit(typed(document))


def write_reports(document: dict, **files: str | None) -> None:
    render.write_reports(typed(document), **files)


ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "data" / "cases" / "report"
SCHEMA = ROOT / "tests" / "data" / "junit" / "junit.xsd"


def assert_golden(name: str, actual: str) -> None:
    """Compare with tests/data/cases/report/<name>; FLOWPROOF_REGENERATE_GOLDEN=1 rewrites it."""
    path = CASES / name
    if REGENERATE:
        path.write_text(actual, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    assert_same_text(
        expected,
        actual,
        source=str(path.relative_to(ROOT)),
        problem=f"{name} differs from the golden file (FLOWPROOF_REGENERATE_GOLDEN=1 rewrites it; "
        "review the diff first)",
    )


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMA))


# --- golden files ----------------------------------------------------------------------------


def test_pr_comment_matches_the_golden_file() -> None:
    assert_golden("pr_comment.md", render_markdown(golden_record()))


def test_junit_matches_the_golden_file() -> None:
    assert_golden("junit.xml", render_junit(golden_record()))


def test_golden_files_are_not_being_regenerated() -> None:
    """A run with FLOWPROOF_REGENERATE_GOLDEN=1 rewrites the files, so it must not end green."""
    if REGENERATE:
        pytest.fail("golden files rewritten: review `git diff tests/data/cases/report`")


# --- markdown --------------------------------------------------------------------------------


def test_pr_comment_lists_failures_first_then_passes() -> None:
    text = render_markdown(golden_record())
    assert text.startswith("## ⛔ flowproof: 1 configuration error, 2 of 3 flows failed\n")
    headings = re.findall(r"^### .*$", text, re.M)
    assert [h.split(" · ")[0] for h in headings] == [
        "### ⛔ 1 spec not run (configuration errors)",
        "### ❌ Rebooking keeps the searched flight",
        "### ❌ Read-only support never refunds",
        "### ✅ Passed: 1 flow",
    ]


def test_a_long_run_is_cut_at_a_flow_boundary_with_a_note_naming_the_run() -> None:
    big = "x" * 1500
    flows = [
        make_flow(
            f"specs/flow{i:03}.yaml",
            f"flow {i:03}",
            reasons=[f"the agent exited with code 1; its stderr ended with:\n{big}"],
            steps=[make_step(2, 9, f"assert reply contains {big[:200]}", "fail", big[:200])],
        )
        for i in range(120)
    ] + [make_flow(f"specs/ok{i:03}.yaml", f"ok {i:03}") for i in range(50)]
    text = render_markdown(make_record(flows))
    assert len(text) < COMMENT_LIMIT
    shown = len(re.findall(r"^### ❌ flow \d{3}", text, re.M))
    left_out = int(re.search(r"\*\*(\d+) flows left out\*\*", text)[1])
    assert 0 < shown < 120 and shown + left_out == 170
    # Whole flows only, failures first: the flows shown are exactly the first failing ones.
    assert f"### ❌ flow {shown - 1:03}" in text and f"flow {shown:03}" not in text
    assert "ok 000" not in text
    assert text.count("```") % 2 == 0, "a code fence was cut in half"
    assert f"The full report is run `{RUN_ID}`" in text
    assert f"`.flowproof/runs/{RUN_ID}/report.json`" in text


def test_the_limit_is_a_parameter_and_a_run_that_fits_has_no_note() -> None:
    record = golden_record()
    assert "left out" not in render_markdown(record)
    short = render_markdown(record, limit=1800)
    assert len(short) < 1800 and "passed) to keep this comment under 1,800 characters" in short


def test_a_header_longer_than_the_limit_is_cut_hard_and_says_so() -> None:
    record = make_record(
        [make_flow()], errors=[f"specs/e{i}.yaml: {'y' * 1900}" for i in range(30)]
    )
    text = render_markdown(record, limit=8000)
    assert len(text) < 8000 and f"Cut at 8,000 characters. The full report: run `{RUN_ID}`" in text
    assert text.count("```") % 2 == 0, "the cut closes the code fence it fell in"


def test_markdown_makes_untrusted_text_inert() -> None:
    flow = make_flow(
        "specs/a|b.yaml",
        "Names with `ticks` | pipes <b>and</b> @someone",
        reasons=["reply was ```\n<img src=x onerror=alert(1)>\n```"],
    )
    text = render_markdown(make_record([flow]))
    assert (
        "### ❌ Names with \\`ticks\\` \\| pipes \\<b\\>and\\</b\\> \\@someone · `specs/a|b.yaml`"
        in text
    )
    # The reason's own triple backticks cannot close the fence around it.
    assert "````text\nreply was ```\n<img src=x onerror=alert(1)>\n```\n````" in text


# --- JUnit -----------------------------------------------------------------------------------


def test_junit_is_valid_against_the_junit_schema(schema: xmlschema.XMLSchema) -> None:
    schema.validate(render_junit(golden_record()))


def test_junit_stays_valid_with_hostile_text(schema: xmlschema.XMLSchema) -> None:
    nasty = 'stderr: \x1b[31mboom\x1b[0m & <tag attr="x"> ]]> \x00 \ufffe\ttab\r\nend'
    flow = make_flow('specs/"q"&<x>.yaml', "name \x07 <b>", reasons=[nasty, "second"])
    xml = render_junit(make_record([flow], errors=[nasty]))
    schema.validate(xml)
    document = schema.to_dict(xml)
    failure = document["testsuite"][0]["testcase"][0]["failure"][0]
    assert failure["@message"].startswith('stderr: \\x1b[31mboom\\x1b[0m & <tag attr="x">')
    assert "\ttab\r\nend" in failure["@message"], "line breaks in the message attribute survive"
    assert failure["$"].endswith("end\n\nsecond")


def test_junit_carries_the_first_reason_as_message_and_all_reasons_as_body(
    schema: xmlschema.XMLSchema,
) -> None:
    document = schema.to_dict(render_junit(golden_record()))
    suite = document["testsuite"][0]
    assert (suite["@name"], suite["@tests"], suite["@failures"], suite["@errors"]) == (
        "flowproof",
        4,
        2,
        1,
    )
    cases = {(c["@classname"], c["@name"]): c for c in suite["testcase"]}
    assert "failure" not in cases[("specs/booking.yaml", "Booking assistant books a flight")]
    diverged = cases[("specs/rebooking.yaml", "Rebooking keeps the searched flight")]
    assert diverged["failure"][0]["@type"] == "divergence"
    assert DIVERGENCE_DETAIL in diverged["failure"][0]["@message"]
    error = cases[("specs/broken.yaml", "configuration error")]["error"][0]
    assert error["@message"].startswith("specs/broken.yaml:4: unknown key 'reslt'")


def test_a_flow_duration_in_the_record_becomes_the_testcase_time(
    schema: xmlschema.XMLSchema,
) -> None:
    flow = make_flow()
    flow["duration"] = 1.25
    xml = render_junit(make_record([flow]))
    schema.validate(xml)
    assert 'name="Booking assistant books a flight" time="1.250"' in xml


# --- HTML ------------------------------------------------------------------------------------


def test_html_escapes_replies_arguments_and_results() -> None:
    attack = "<script>alert('pwned')</script>"
    flow = make_flow(
        name=f"flow {attack}",
        timeline=[
            make_turn(1, calls=[("search", {"q": f'"><img src=x onerror=alert(1)>{attack}'})]),
            make_turn(2, results=[("search", attack)], text=attack),
        ],
        reply=attack,
        reasons=["its stderr ended with:\n\x1b[31mRuntimeError\x1b[0m"],
    )
    html = render_html(make_record([flow]))
    assert "<script" not in html and "<img" not in html
    assert "\x1b" not in html and "\\x1b[31mRuntimeError\\x1b[0m" in html
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_html_is_self_contained() -> None:
    html = render_html(golden_record())
    assert "<style>" in html
    assert not re.search(r"<(script|link|img|iframe|object)\b", html)
    assert not re.search(r"\b(src|href)=\"(?!#)", html), "only in-page links"
    assert "http://" not in html and "https://" not in html and "@import" not in html
    assert "default-src 'none'" in html, "the CSP forbids loading anything at all"


def test_html_shows_summary_divergence_assertions_and_timeline() -> None:
    html = render_html(golden_record())
    assert f'<div class="path">{DIVERGENCE_DETAIL.replace(chr(34), "&#34;")}</div>' in html
    assert "Diverged at request 3" in html
    assert "1 spec not run" in html
    assert html.index("Rebooking keeps the searched flight") < html.index(
        "Booking assistant books a flight"
    ), "failures first"
    for text in (
        "Prompt",
        "Model · turn 2",
        "Tool result <code>search_flights</code>",
        "Reply · model turn 3",
        "assert_no_tool_call issue_refund",
        "sec.no-refunds-in-readonly",
        "Warning",
    ):
        assert text in html, text


def test_long_json_collapses_behind_details() -> None:
    big = {"flights": [{"id": f"KQ{i}", "dest": "NBO"} for i in range(40)]}
    flow = make_flow(timeline=[make_turn(1, results=[("search_flights", big)], text="ok")])
    html = render_html(make_record([flow]))
    assert '<details class="value">' in html and "KQ39" in html


def test_a_turn_of_an_unknown_dialect_still_renders() -> None:
    flow = make_flow(timeline=[{"turn": 1, "dialect": "bedrock_converse", "known": False}])
    assert "bedrock_converse (not readable by this flowproof)" in render_html(make_record([flow]))


# --- contract --------------------------------------------------------------------------------


def test_an_incomplete_record_is_a_trace_error_naming_the_field() -> None:
    record = golden_record()
    del record["flows"][0]["steps"]
    for renderer in (render_html, render_markdown, render_junit):
        with pytest.raises(
            RunRecordError, match="not a complete flowproof run record: no 'steps' field"
        ):
            renderer(record)


def test_write_reports_writes_each_file_asked_for(tmp_path: Path) -> None:
    record = golden_record()
    write_reports(
        record,
        html=str(tmp_path / "out" / "r.html"),
        markdown=str(tmp_path / "r.md"),
        junit=None,
    )
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["r.html", "r.md"]
    assert (tmp_path / "r.md").read_text(encoding="utf-8") == render_markdown(record)


def test_a_record_run_counts_recorded_turns_and_says_when_no_trace_was_written() -> None:
    written = make_flow()
    written["trace"] = "specs/booking.trace.json"
    unwritten = make_flow("specs/b.yaml", "b", reasons=["step 2 failed"], turns=(1, 0))
    record = {**make_record([written, unwritten]), "mode": "record"}
    text = render_markdown(record)
    assert "1 turn recorded; no trace written" in text
    assert "| 3 turns recorded |" in text

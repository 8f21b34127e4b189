"""Every report lists what a flow normalised and which fields it matched without."""

from __future__ import annotations

from flowproof.report import render
from flowproof.runrecord.store import parse_run_record
from tests.unit.report.builders import make_flow, make_record

PHRASE = "normalised: cwd, date, ${PROJECT} · matched ignoring: metadata.user_id, input[*].id"


def record(failing: bool) -> object:
    flow = make_flow(reasons=["request 2 matches no recorded turn"] if failing else [])
    flow["normalized"] = ["cwd", "date", "${PROJECT}"]
    flow["ignored_fields"] = ["metadata.user_id", "input[*].id"]
    plain = make_flow(name="A strict flow", spec="specs/strict.yaml")
    return parse_run_record(make_record([flow, plain]), "report.json")


def test_html_markdown_and_junit_list_the_declared_rules() -> None:
    for failing in (True, False):
        typed = record(failing)
        html = render.render_html(typed)  # type: ignore[arg-type]
        assert "normalised: cwd, date, ${PROJECT} · matched ignoring: metadata.user_id" in html
        markdown = render.render_markdown(typed)  # type: ignore[arg-type]
        assert (
            "served 3 of 3 recorded turns · normalised: `cwd`, `date`, `${PROJECT}` · matched "
            "ignoring: `metadata.user_id`, `input[*].id`"
        ) in markdown
        assert markdown.count("normalised:") == 1
        junit = render.render_junit(typed)  # type: ignore[arg-type]
        assert PHRASE in junit
        # A flow that declares nothing shows nothing of the kind.
        assert junit.count("normalised:") == 1 and html.count("normalised:") == 1

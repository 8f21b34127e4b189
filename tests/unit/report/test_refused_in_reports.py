"""Every report, and the terminal summary, say how many requests from outside the agent a flow
refused, and only when there were any."""

from __future__ import annotations

from flowproof.report import render
from flowproof.report.terminal import flow_lines
from flowproof.runrecord.model import RunRecord
from flowproof.runrecord.store import parse_run_record
from tests.unit.report.builders import make_flow, make_record

LINE = (
    "refused requests from outside the agent: 2 (sent to flowproof's proxy or an MCP stand-in "
    "without the flow's capability; none was forwarded, served or recorded)"
)


def record(failing: bool) -> RunRecord:
    flow = make_flow(reasons=["request 2 matches no recorded turn"] if failing else [])
    flow["refused_from_outside"] = 2
    plain = make_flow(name="A quiet flow", spec="specs/quiet.yaml")
    return parse_run_record(make_record([flow, plain]), "report.json")


def test_html_markdown_junit_and_the_terminal_count_the_refused_requests() -> None:
    for failing in (True, False):
        typed = record(failing)
        for report in (
            render.render_html(typed),
            render.render_markdown(typed),
            render.render_junit(typed),
            "\n".join(flow_lines(typed.flows[0], "replay")),
        ):
            assert report.count("refused requests from outside the agent: 2") == 1, report
        assert f"      warning: {LINE}" in flow_lines(typed.flows[0], "replay")
        # A flow that refused nothing says nothing of it.
        assert not any("outside the agent" in line for line in flow_lines(typed.flows[1], "replay"))


def test_a_run_record_written_before_the_field_existed_reads_as_zero() -> None:
    typed = parse_run_record(make_record([make_flow()]), "report.json")
    assert typed.flows[0].refused_from_outside == 0

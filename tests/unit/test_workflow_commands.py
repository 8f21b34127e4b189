"""flowproof/guards/workflow_commands.py: flowproof's own commands escaped as the runner unescapes
them, and any other line kept from being read as a command."""

from __future__ import annotations

import pytest

from flowproof.guards.workflow_commands import defuse, quoted, workflow_command


def test_properties_escape_what_would_end_them_and_data_what_would_end_the_line() -> None:
    line = workflow_command(
        "error", "50%\r\ndone: a, b", {"file": "specs/a,title=Pwned,line=99:%0A\n.yaml"}
    )
    assert line == (
        "::error file=specs/a%2Ctitle=Pwned%2Cline=99%3A%250A%0A.yaml::50%25%0D%0Adone: a, b"
    )
    assert workflow_command("notice", "hi") == "::notice::hi"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain\nlines", "plain\nlines"),
        ("a\n::warning x::y", "a\n  | ::warning x::y"),
        ("a\r::warning x::y", "a\r  | ::warning x::y"),  # a lone CR ends a line for the runner
        ("a\r\n   ::add-mask::v", "a\r\n  |    ::add-mask::v"),
        ("::stop-commands::t", "  | ::stop-commands::t"),
        ("mid ##[warning]older form", "mid ##\\[warning]older form"),
        ("a :: b", "a :: b"),
    ],
)
def test_defuse_guards_every_line_the_runner_would_act_on(text: str, shown: str) -> None:
    assert defuse(text) == shown


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("Booking assistant", "Booking assistant"),
        ("specs/a,b:c.yaml", "specs/a,b:c.yaml"),
        ("evil\n::warning x", '"evil\\n::warning x"'),
        ("::warning x", '"::warning x"'),
        ("tab\there", '"tab\\there"'),
        ("ünïcode", "ünïcode"),
    ],
)
def test_a_name_is_json_quoted_only_when_it_is_not_one_plain_line(name: str, shown: str) -> None:
    assert quoted(name) == shown

"""Doctor's one exit rule and its one argument check, which both its doors use (the command line
and the `doctor` tool of `flowproof mcp`: tests/e2e/test_doctor_doors.py)."""

from __future__ import annotations

import pytest

from flowproof.core.errors import EXIT_CONFIG
from flowproof.drivers.command import AgentOutcome
from flowproof.engine.doctor import DoctorArgumentError, DoctorReport, McpContact, check_arguments

AGENT = AgentOutcome(
    timed_out=False, stopped_early=False, seconds=0.1, exit_code=0, stdout_tail="", stderr_tail=""
)
ARRIVED = (("POST", "/v1/chat/completions", "openai_chat"),)


def contact(name: str, contacts: int) -> McpContact:
    return McpContact(name, "stdio", f"FLOWPROOF_MCP_SERVER_{name.upper()}", contacts, 0)


@pytest.mark.parametrize(
    ("requests", "mcp", "exit_code"),
    [
        (ARRIVED, (), 0),
        (ARRIVED, (contact("files", 1),), 0),
        ((), (), 1),
        (ARRIVED, (contact("files", 1), contact("web", 0)), 1),
        ((), (contact("files", 1),), 1),
    ],
)
def test_doctor_exits_1_when_no_model_request_arrived_or_a_named_server_was_never_reached(
    requests: tuple[tuple[str, str, str], ...], mcp: tuple[McpContact, ...], exit_code: int
) -> None:
    assert DoctorReport(requests, AGENT, 4000, mcp).exit_code == exit_code


@pytest.mark.parametrize(
    ("mcp", "mcp_url", "env", "argument", "reason"),
    [
        (
            ["no spaces"],
            [],
            {},
            "mcp",
            "'no spaces' is not an MCP server name (a letter or digit, then letters, digits, "
            "'_', '.' or '-')",
        ),
        (["-x"], [], {}, "mcp", "'-x' is not an MCP server name"),
        ([], ["web", "web"], {}, "mcp_url", "'web' is named twice"),
        (["files"], ["files"], {}, "mcp_url", "'files' is named twice"),
        ([], [], {"1ST": "x"}, "env", "'1ST' is not a variable name"),
        ([], [], {"A-B": "x"}, "env", "'A-B' is not a variable name"),
    ],
)
def test_an_argument_doctor_cannot_run_with_is_a_usage_error_naming_it(
    mcp: list[str], mcp_url: list[str], env: dict[str, str], argument: str, reason: str
) -> None:
    with pytest.raises(DoctorArgumentError) as refused:
        check_arguments(mcp, mcp_url, env)
    assert refused.value.argument == argument
    assert refused.value.reason.startswith(reason)
    assert str(refused.value) == f"{argument}: {refused.value.reason}"
    assert refused.value.exit_code == EXIT_CONFIG


def test_names_a_spec_could_hold_are_accepted() -> None:
    check_arguments(["files", "a.b_c-1"], ["web", "9lives"], {"_X": "", "OPENAI_BASE_URL": "u"})

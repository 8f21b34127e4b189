"""Spec loading: every error names the file, the line and the fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flowproof.core.errors import SpecError
from flowproof.spec.load import load_spec
from flowproof.spec.suite import load_suite

GOOD = """\
name: Booking
app: agent
agent:
  command: python3 agent.py
tools:
  - name: search_flights
    result: { flights: [] }
  - name: create_booking
steps:
  - prompt: Book me a flight
  - assert_tool_call: search_flights where destination contains NBO
  - assert: reply contains booked
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "booking.yaml"
    path.write_text(textwrap.dedent(text))
    return load_spec(path)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as caught:
        load(tmp_path, text)
    return str(caught.value).replace(str(tmp_path) + "/", "")


def test_a_good_spec_loads(tmp_path: Path) -> None:
    loaded = load(tmp_path, GOOD)
    assert loaded.prompts == ("Book me a flight",)
    assert [s.ref.line for s in loaded.assertions] == [11, 12]
    assert [t.is_mocked for t in loaded.spec.tools] == [True, False]
    assert loaded.spec.agent.timeout == 300


def test_misspelled_key_names_line_and_nearest_key(tmp_path: Path) -> None:
    text = GOOD.replace("    result: { flights: [] }", "    reslt: { flights: [] }")
    assert (
        error(tmp_path, text)
        == "booking.yaml:7: unknown key 'reslt' in tools[0]; did you mean 'result'?"
    )


def test_misspelled_top_level_key(tmp_path: Path) -> None:
    assert (
        error(tmp_path, GOOD.replace("steps:", "stepz:"))
        == "booking.yaml:9: unknown key 'stepz' in the spec; did you mean 'steps'?"
    )


def test_missing_command(tmp_path: Path) -> None:
    text = GOOD.replace("  command: python3 agent.py", "  timeout: 10")
    assert error(tmp_path, text) == (
        "booking.yaml:3: agent: missing 'command' (the shell command that starts your agent) "
        "or 'url' (a running service to POST the prompt to)"
    )


def test_command_and_url_are_exclusive(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  command: python3 agent.py", "  command: x\n  url: http://127.0.0.1:8088/task"
    )
    assert (
        error(tmp_path, text) == "booking.yaml:3: agent: give either 'command' or 'url', not both"
    )


def test_url_needs_a_proxy_port(tmp_path: Path) -> None:
    text = GOOD.replace("  command: python3 agent.py", "  url: http://127.0.0.1:8088/task")
    assert error(tmp_path, text) == (
        "booking.yaml:3: agent: 'url' needs 'proxy_port': the local port the proxy binds, which "
        "your service's model base URL must already point at (http://127.0.0.1:<proxy_port>/v1)"
    )


def test_wrong_type(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  command: python3 agent.py", "  command: python3 agent.py\n  timeout: soon"
    )
    assert (
        error(tmp_path, text)
        == "booking.yaml:5: agent.timeout: Input should be a valid number, unable to parse string as a number"
    )


def test_wrong_app(tmp_path: Path) -> None:
    assert (
        error(tmp_path, GOOD.replace("app: agent", "app: web"))
        == "booking.yaml:2: app: expected 'agent', got 'web'"
    )


def test_unknown_step_kind(tmp_path: Path) -> None:
    text = GOOD.replace("  - assert: reply", "  - asert: reply")
    assert error(tmp_path, text) == "booking.yaml:12: unknown step 'asert'; did you mean 'assert'?"


def test_result_and_results_together(tmp_path: Path) -> None:
    text = GOOD.replace("    result: { flights: [] }", "    result: 1\n    results: [1, 2]")
    assert (
        error(tmp_path, text)
        == "booking.yaml:6: tools[0]: give either 'result' or 'results', not both"
    )


def test_duplicate_key(tmp_path: Path) -> None:
    assert (
        error(tmp_path, GOOD + "name: again\n")
        == "booking.yaml:13: duplicate key 'name'; keep one of them"
    )


def test_invalid_yaml(tmp_path: Path) -> None:
    assert (
        error(tmp_path, "name: [unclosed\n")
        == "booking.yaml:2: not valid YAML: did not find expected ',' or ']'"
    )


def test_no_prompt(tmp_path: Path) -> None:
    text = GOOD.replace("  - prompt: Book me a flight\n", "")
    assert error(tmp_path, text) == (
        "booking.yaml:9: the flow has no prompt step; "
        "add `- prompt: <the task for the agent>` to steps"
    )


def test_near_miss_tool_name(tmp_path: Path) -> None:
    text = GOOD.replace("assert_tool_call: search_flights", "assert_tool_call: serch_flights")
    assert error(tmp_path, text) == (
        "booking.yaml:11: step 2 names tool 'serch_flights', which no "
        "tools: entry declares; did you mean 'search_flights'?"
    )


def test_undeclared_but_distinct_tool_name_is_allowed(tmp_path: Path) -> None:
    text = GOOD.replace("assert_tool_call: search_flights", "assert_tool_call: check_visa")
    assert load(tmp_path, text).assertions[0].assertion.tool == "check_visa"


def test_unreadable_clause(tmp_path: Path) -> None:
    text = GOOD.replace("destination contains NBO", "destination resembles NBO")
    message = error(tmp_path, text)
    assert message.startswith(
        "booking.yaml:11: step 2 (assert_tool_call): could not read clause "
        "'destination resembles NBO'"
    )
    assert "equals (is), contains, matches, exists, is absent (is missing)" in message


def test_broken_regex(tmp_path: Path) -> None:
    text = GOOD.replace("destination contains NBO", "destination matches [A-Z")
    assert error(tmp_path, text).startswith(
        "booking.yaml:11: step 2 (assert_tool_call): matches: invalid regex '[A-Z'"
    )


def test_line_of_gives_the_line_of_a_key_or_list_item(tmp_path: Path) -> None:
    loaded = load(tmp_path, GOOD + "strict: true\n")
    assert loaded.line_of("strict") == 13
    assert loaded.line_of("tools", 0) == 6
    assert loaded.line_of("tools", 0, "result") == 7
    assert loaded.line_of("steps", 2) == 12
    assert loaded.line_of("control") is None


def test_steps_keep_the_spec_path_as_given(tmp_path: Path) -> None:
    loaded = load(tmp_path, GOOD)
    ref = loaded.assertions[0].ref
    assert (ref.spec, ref.file, ref.line) == (str(tmp_path / "booking.yaml"), "booking.yaml", 11)


def test_every_assertion_step_kind_loads(tmp_path: Path) -> None:
    text = (
        GOOD + "  - assert_no_tool_call: transfer_funds\n  - assert_no_secret_leak: DB_PASSWORD\n"
    )
    loaded = load(tmp_path, text)
    assert [s.kind for s in loaded.assertions] == [
        "assert_tool_call",
        "assert",
        "assert_no_tool_call",
        "assert_no_secret_leak",
    ]
    assert [s.assertion.kind for s in loaded.assertions] == [s.kind for s in loaded.assertions]


def test_a_step_that_is_not_a_one_key_mapping_lists_the_kinds(tmp_path: Path) -> None:
    text = GOOD.replace("  - assert: reply contains booked", "  - just text")
    assert error(tmp_path, text) == (
        "booking.yaml:12: a step must be a one-key mapping such as `- prompt: ...`; step kinds: "
        "prompt, conversation, assert_tool_call, assert_no_tool_call, assert, "
        "assert_no_secret_leak, assert_no_egress"
    )


def test_a_bad_secret_step_names_its_line(tmp_path: Path) -> None:
    text = GOOD + "  - assert_no_secret_leak: db-password\n"
    assert error(tmp_path, text) == (
        "booking.yaml:13: step 4 (assert_no_secret_leak): 'db-password' is not an environment "
        "variable name; write `assert_no_secret_leak: NAME [NAME...]` with the variables that "
        "hold secrets"
    )


def test_a_spec_that_is_not_utf8_names_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "booking.yaml"
    path.write_bytes(GOOD.replace("Book me a flight", "Book a caf\xe9").encode("latin-1"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.line == 10
    assert str(caught.value) == (
        f"{path}:10: not UTF-8 text (byte 0xe9 at column 23); save the file as UTF-8"
    )


def test_a_suite_file_that_is_not_utf8_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "flowproof.yaml"
    path.write_bytes(b"env:\n  CITY: Bogot\xe1\n")
    with pytest.raises(SpecError) as caught:
        load_suite(path)
    assert str(caught.value) == (
        f"{path}:2: not UTF-8 text (byte 0xe1 at column 14); save the file as UTF-8"
    )


def test_a_yaml_alias_is_refused_naming_its_line(tmp_path: Path) -> None:
    text = GOOD.replace("    result: { flights: [] }", "    result: &empty { flights: [] }")
    text += "  - assert_tool_call: create_booking\nextra: *empty\n"
    assert error(tmp_path, text) == (
        "booking.yaml:14: YAML alias *empty is not supported in flowproof files; write the "
        "value out in full where it is used (and drop the &empty anchor)"
    )


def test_a_merge_key_is_an_alias_too(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  - name: create_booking\n", "  - &tool\n    name: create_booking\n  - <<: *tool\n"
    )
    assert error(tmp_path, text).startswith("booking.yaml:10: YAML alias *tool is not supported")


def test_an_anchor_without_an_alias_is_harmless(tmp_path: Path) -> None:
    loaded = load(tmp_path, GOOD.replace("result: {", "result: &r {"))
    assert loaded.spec.tools[0].result == {"flights": []}


def test_deep_nesting_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    text = GOOD.replace("{ flights: [] }", "[" * 5000 + "]" * 5000)
    assert error(tmp_path, text) == (
        "booking.yaml:7: nested more than 50 levels deep; a spec needs a few levels, not dozens"
    )


def test_a_suite_file_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "flowproof.yaml"
    path.write_text("env:\n  CITY: &c Nairobi\n  TOWN: *c\n")
    with pytest.raises(SpecError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(f"{path}:3: YAML alias *c is not supported")


MCP = """\
name: Files
app: agent
agent:
  command: python3 agent.py
mcp:
{servers}
steps:
  - prompt: Tidy up
{steps}
"""


def mcp_spec(servers: str, steps: str = "  - assert_no_tool_call: fs/delete_file") -> str:
    return MCP.format(servers=textwrap.indent(textwrap.dedent(servers), "  "), steps=steps)


def test_an_mcp_server_loads_with_its_mocked_tools(tmp_path: Path) -> None:
    loaded = load(
        tmp_path,
        mcp_spec("""\
        - name: fs
          command: npx server-filesystem ./sandbox
          tools:
            - name: delete_file
              result: { ok: true }
        """),
    )
    (server,) = loaded.spec.mcp
    assert server.command == "npx server-filesystem ./sandbox"
    assert [t.is_mocked for t in server.tools] == [True]


@pytest.mark.parametrize(
    ("servers", "problem"),
    [
        ("- name: fs\n  command: a\n  url: http://x\n", "give either 'command'"),
        ("- name: fs\n", "missing 'command' (the command that starts a stdio MCP server)"),
        ("- name: fs\n  command: a\n  port: 8931\n", "'port' applies to a 'url' server"),
        ("- name: fs\n  command: a\n- name: fs\n  url: b\n", "mcp server name 'fs' is used twice"),
        (
            "- name: my-fs\n  command: a\n- name: my_fs\n  command: b\n",
            "mcp servers 'my-fs' and 'my_fs' have the same variable name (FLOWPROOF_MCP_*_MY_FS)",
        ),
        ("- name: fs\n  comand: a\n", "unknown key 'comand' in mcp[0]; did you mean 'command'?"),
    ],
)
def test_a_wrong_mcp_server_is_a_spec_error(tmp_path: Path, servers: str, problem: str) -> None:
    assert problem in error(tmp_path, mcp_spec(servers))


def test_a_tool_boundary_step_must_name_a_declared_server(tmp_path: Path) -> None:
    text = mcp_spec("- name: files\n  command: a\n", "  - assert_no_tool_call: file/delete_file")
    assert error(tmp_path, text) == (
        "booking.yaml:11: step 2 names tool 'file/delete_file' at MCP server 'file', which no "
        "mcp: entry declares; did you mean 'files/delete_file'?"
    )

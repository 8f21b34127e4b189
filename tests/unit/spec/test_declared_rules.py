"""normalize:, ignore_fields: and agent.cwd in specs and flowproof.yaml: errors name file:line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flowproof.core.errors import SpecError
from flowproof.spec.load import load_spec
from flowproof.spec.suite import load_suite

SPEC = """\
name: Coding agent
app: agent
agent:
  command: python3 agent.py
{extra}
steps:
  - prompt: Fix the failing test
"""


def write(tmp_path: Path, extra: str, name: str = "flow.yaml") -> Path:
    path = tmp_path / name
    body = SPEC.format(extra=textwrap.dedent(extra).strip())
    path.write_text(body if name != "flowproof.yaml" else textwrap.dedent(extra))
    return path


def spec_error(tmp_path: Path, extra: str) -> str:
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, extra))
    return str(caught.value).replace(str(tmp_path) + "/", "")


def test_the_three_keys_load(tmp_path: Path) -> None:
    loaded = load_spec(
        write(
            tmp_path,
            """
            normalize: [cwd, date, "${PROJECT}"]
            ignore_fields:
              - metadata.user_id
              - input[*].id
            """,
        )
    )
    assert loaded.spec.normalize == ["cwd", "date", "${PROJECT}"]
    assert loaded.spec.ignore_fields == ["metadata.user_id", "input[*].id"]
    assert loaded.line_of("ignore_fields", 1) == 8


def test_a_forbidden_path_is_a_spec_error_naming_its_line(tmp_path: Path) -> None:
    message = spec_error(
        tmp_path,
        """
        ignore_fields:
          - metadata.user_id
          - system
        """,
    )
    assert message == (
        "flow.yaml:7: ignore_fields[1]: `system` is part of what the model is asked (the "
        "conversation, its tools, the model); matching stays strict there, since a changed "
        "prompt is what a replay must catch. Only an item's own identity may be ignored: "
        "`messages[*].id`, `input[*].id`, `input[*].internal_chat_message_metadata_passthrough`, "
        "`contents[*].parts[*].functionCall.id`, `contents[*].parts[*].functionResponse.id`"
    )


def test_an_unknown_fact_is_a_spec_error_with_a_suggestion(tmp_path: Path) -> None:
    message = spec_error(tmp_path, "normalize:\n  - hostname\n  - hom\n")
    assert message == (
        "flow.yaml:7: normalize[1]: unknown fact 'hom'; did you mean 'home'? "
        "(or `${VAR}` for a variable's value)"
    )


def test_an_empty_entry_is_refused(tmp_path: Path) -> None:
    message = spec_error(tmp_path, 'normalize: [cwd, ""]\n')
    assert message.startswith("flow.yaml:5: normalize[1]: an entry is empty;")


def test_an_entry_listed_twice_is_refused(tmp_path: Path) -> None:
    message = spec_error(tmp_path, "normalize: [date, date]\n")
    assert message == "flow.yaml:5: normalize: 'date' is listed twice"


def test_cwd_is_for_command_agents(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        SPEC.replace(
            "  command: python3 agent.py",
            "  url: http://127.0.0.1:9/run\n  proxy_port: 4000\n  cwd: work",
        ).format(extra="")
    )
    with pytest.raises(SpecError, match="'cwd' applies to a command flowproof starts"):
        load_spec(path)


def test_the_suite_file_takes_both_lists_with_the_same_errors(tmp_path: Path) -> None:
    good = tmp_path / "flowproof.yaml"
    good.write_text("normalize: [cwd]\nignore_fields: [prompt_cache_key]\n")
    suite = load_suite(good)
    assert suite.settings.normalize == ["cwd"]
    assert suite.settings.ignore_fields == ["prompt_cache_key"]
    assert suite.line_of("normalize", 0) == 1
    bad = tmp_path / "sub" / "flowproof.yaml"
    bad.parent.mkdir()
    bad.write_text("env: {}\nignore_fields:\n  - tool_choice.type\n")
    with pytest.raises(SpecError) as caught:
        load_suite(bad)
    assert str(caught.value).startswith(
        f"{bad}:3: ignore_fields[0]: 'tool_choice.type' is inside `tool_choice`, part of what"
    )

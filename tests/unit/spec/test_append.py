"""Steps are added to a spec's text, its comments and layout kept."""

from __future__ import annotations

import pytest

from flowproof.spec.append import CannotAppend, append_steps

NEW = [{"assert": "reply contains B-1042"}]


def render(indent: str) -> list[str]:
    return [f"{indent}- assert: reply contains B-1042  # why"]


def test_steps_go_after_the_last_step_at_its_indentation_comments_kept() -> None:
    text = (
        "name: x  # the flow\n"
        "steps:\n"
        "  - prompt: hi   # the task\n"
        "  # a note about the next key\n"
        "\n"
        "strict: false\n"
    )
    assert append_steps(text, render, NEW) == (
        "name: x  # the flow\n"
        "steps:\n"
        "  - prompt: hi   # the task\n"
        "  - assert: reply contains B-1042  # why\n"
        "  # a note about the next key\n"
        "\n"
        "strict: false\n"
    )


def test_an_unindented_list_and_a_block_scalar_prompt() -> None:
    text = "steps:\n- prompt: |\n    line one\n    line two\n\n# end\n"
    result = append_steps(text, render, NEW)
    assert result == (
        "steps:\n- prompt: |\n    line one\n    line two\n"
        "- assert: reply contains B-1042  # why\n\n# end\n"
    )


def test_a_file_without_a_final_newline() -> None:
    assert append_steps("steps:\n  - prompt: hi", render, NEW).endswith(
        "  - prompt: hi\n  - assert: reply contains B-1042  # why\n"
    )


def test_a_flow_style_list_is_refused_with_the_reason() -> None:
    with pytest.raises(CannotAppend, match="flow style"):
        append_steps("steps: [ {prompt: hi} ]\n", render, NEW)


def test_lines_that_do_not_read_back_as_expected_are_refused() -> None:
    with pytest.raises(CannotAppend, match="would not read back"):
        append_steps("steps:\n  - prompt: hi\n", render, [{"assert": "reply contains other"}])

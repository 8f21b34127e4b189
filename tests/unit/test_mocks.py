"""One mock type for both boundaries, and one sentence for a list that ran out."""

from __future__ import annotations

import pytest

from flowproof.core.errors import ToolResultsExhausted
from flowproof.core.mocks import MCP_TOOLS, MODEL_TOOLS, ToolMock, ran_out


def test_a_list_that_ran_out_is_one_sentence_in_each_boundary_s_words() -> None:
    assert ran_out("pick", 3, 2, MODEL_TOOLS) == (
        "tool pick was called 3 times, but its results: list has only 2 entries"
    )
    assert ran_out("pick", 2, 1, MCP_TOOLS) == (
        "tool pick was called 2 times but its mcp `results:` list has 1"
    )


def test_a_single_result_answers_every_call_and_a_list_runs_out() -> None:
    assert ToolMock(("x",), repeat=True).result_for("t", 7) == "x"
    listed = ToolMock(("a", "b"), repeat=False, where="spec.yaml:9")
    assert listed.result_for("t", 1) == "b"
    with pytest.raises(ToolResultsExhausted) as caught:
        listed.result_for("t", 2)
    assert str(caught.value).endswith(
        "(spec.yaml:9); add an entry, or give `result:` to answer every call alike"
    )

"""Honest warnings about what the model boundary cannot do.

At the model boundary flowproof rewrites what the model is TOLD a tool returned, and sees what
the model ASKED for. It does not stand between the agent and its tools: a mocked tool still ran,
and a forbidden tool would have run had the model asked. Until a flow declares the tool under an
intercepting boundary (an `mcp:` server whose stand-in answers it), every run says so.
"""

from __future__ import annotations

from flowproof.assertions.evaluate import at_tool_boundary
from flowproof.assertions.grammar import ToolCallAssertion
from flowproof.spec.load import LoadedSpec


def uncovered_tools(loaded: LoadedSpec) -> list[str]:
    """A tool the flow mocks or forbids, unless an MCP stand-in answers it (`mcp:` with a
    `result:`), which is what stops it running; a `<server>/<tool>` step judges the tool
    boundary itself and needs no warning."""
    answered = {tool.name for server in loaded.spec.mcp for tool in server.tools if tool.is_mocked}
    warnings = []
    for tool in loaded.spec.tools:
        if tool.is_mocked and tool.name not in answered:
            warnings.append(
                f"tool {tool.name} is mocked at the model boundary only: the agent still ran it "
                "for real; only what the model was told it returned is replaced"
            )
    for step in loaded.assertions:
        assertion = step.assertion
        if (
            isinstance(assertion, ToolCallAssertion)
            and assertion.forbid
            and assertion.tool not in answered
            and not at_tool_boundary(assertion.tool)
        ):
            name = assertion.tool
            warnings.append(
                f"{assertion}: nothing intercepts {name}, so this proves only that the model "
                "never asked for such a call (it was withheld from the model, or not taken); "
                "had the model asked, the agent would still have run it"
            )
    return warnings

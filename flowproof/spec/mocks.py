"""The tools a spec answers itself (`result:` or `results:`), as the one ToolMock both
boundaries serve: the model's `tools:` here, an `mcp:` server's tools in mcp/boundary.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flowproof.core.mocks import ToolMock
from flowproof.spec.load import LoadedSpec
from flowproof.spec.model import ToolSpec


def tool_mocks(
    tools: Sequence[ToolSpec], where: Callable[[int], str] = lambda index: ""
) -> dict[str, ToolMock]:
    """The mocks of the tools a spec answers itself (`result:` or `results:`); `where(index)`
    says where the spec writes the `index`-th tool's `results:` list."""
    mocks = {}
    for index, tool in enumerate(tools):
        if tool.results is not None:
            mocks[tool.name] = ToolMock(tuple(tool.results), repeat=False, where=where(index))
        elif tool.is_mocked:
            mocks[tool.name] = ToolMock((tool.result,), repeat=True)
    return mocks


def mocks_for(loaded: LoadedSpec) -> dict[str, ToolMock]:
    """What the model is told each mocked tool of the spec's `tools:` returned."""

    def where(index: int) -> str:
        line = loaded.line_of("tools", index, "results")
        return f"{loaded.path}:{line}" if line else str(loaded.path)

    return tool_mocks(loaded.spec.tools, where)

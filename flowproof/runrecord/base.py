"""The base of every run-record model: strict, frozen, documented by its docstrings.

A module of its own, below runrecord/model.py, so that a lane kind's own row type (an MCP
lane's: mcp/rows.py) can be defined on it without importing the run record it joins.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RecordModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LaneRow(RecordModel):
    """The base of a lane kind's own timeline rows: every row names the lane it crossed."""

    lane: str
    """`<kind>.<name>`: the lane's kind, then which of its lanes."""

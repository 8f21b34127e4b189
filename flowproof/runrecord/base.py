"""The base of every run-record model: strict, frozen, documented by its docstrings.

A module of its own, below runrecord/model.py, so that a lane kind's own row type (an MCP
lane's: mcp/rows.py) can be defined on it without importing the run record it joins.

The docstring under each field is its description in the JSON schema. It is read from the
source only when the schema is rendered (`documented`), not as each model is defined: a run
defines every model at start-up and never asks for a description, and reading the source
of each class costs more than defining it. For the same reason each model's validator is
built when it is first used (`defer_build`), not when it is defined.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Iterator
from functools import cache
from graphlib import TopologicalSorter
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict


class RecordModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class LaneRow(RecordModel):
    """The base of a lane kind's own timeline rows: every row names the lane it crossed."""

    lane: str
    """`<kind>.<name>`: the lane's kind, then which of its lanes."""


def documented(root: type[RecordModel]) -> type[RecordModel]:
    """`root`, with every record model's fields described by the docstrings under them (as
    pydantic's `use_attribute_docstrings` would), and each model rebuilt after every model
    its fields hold, so that a schema rendered from `root` carries the descriptions at
    every depth whatever was built before."""
    models = list(_record_models(RecordModel))
    for model in models:
        for name, field in model.model_fields.items():
            if field.description is None:
                field.description = _field_docstring(model, name)
    order = TopologicalSorter({model: _held_models(model) for model in models})
    for model in order.static_order():
        model.model_rebuild(force=True)
    return root


def _record_models(base: type[RecordModel]) -> Iterator[type[RecordModel]]:
    for model in base.__subclasses__():
        yield model
        yield from _record_models(model)


def _held_models(model: type[RecordModel]) -> set[type[RecordModel]]:
    """The record models a model's fields hold, at any depth of their types."""
    found: set[type[RecordModel]] = set()
    pending: list[Any] = [field.annotation for field in model.model_fields.values()]
    while pending:
        annotation = pending.pop()
        if isinstance(annotation, type) and issubclass(annotation, RecordModel):
            found.add(annotation)
        pending.extend(get_args(annotation))
    found.discard(model)
    return found


def _field_docstring(model: type[RecordModel], name: str) -> str | None:
    """The docstring under `name` in the class that declares it last (the first in the
    model's method resolution order whose own annotations name it), as pydantic reads it."""
    for owner in model.__mro__:
        if name in owner.__dict__.get("__annotations__", {}):
            return _docstrings(owner.__module__, owner.__qualname__).get(name)
    return None


@cache
def _docstrings(module: str, qualname: str) -> dict[str, str]:
    """Each annotated attribute of the module-level class `qualname` → the string literal
    right under it, cleaned as a docstring."""
    source = inspect.getsource(sys.modules[module])
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == qualname:
            body = node.body
            for before, after in zip(body, body[1:], strict=False):
                if (
                    isinstance(before, ast.AnnAssign)
                    and isinstance(before.target, ast.Name)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    found[before.target.id] = inspect.cleandoc(after.value.value)
    return found

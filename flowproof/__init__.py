"""flowproof: record and replay AI agents at their model boundary.

`from flowproof import Flow` is the Python API (flowproof/api.py), loaded on first use so that
`import flowproof` (and `flowproof --version`) stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from flowproof.api import Divergence as Divergence
    from flowproof.api import FieldDifference as FieldDifference
    from flowproof.api import Flow as Flow
    from flowproof.api import FlowResult as FlowResult
    from flowproof.api import StepVerdict as StepVerdict

_API = ("Divergence", "FieldDifference", "Flow", "FlowResult", "StepVerdict")


def __getattr__(name: str) -> Any:
    if name in _API:
        from flowproof import api

        return getattr(api, name)
    raise AttributeError(f"module 'flowproof' has no attribute {name!r}")

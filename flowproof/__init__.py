"""flowproof: record and replay AI agents at their model boundary.

`from flowproof import Flow` is the Python API (flowproof/doors/api.py), loaded on first use so that
`import flowproof` (and `flowproof --version`) stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowproof._version import __version__ as __version__

if TYPE_CHECKING:
    from flowproof.doors.api import Divergence as Divergence
    from flowproof.doors.api import FieldDifference as FieldDifference
    from flowproof.doors.api import Flow as Flow
    from flowproof.doors.api import FlowResult as FlowResult
    from flowproof.doors.api import StepVerdict as StepVerdict

_API = ("Divergence", "FieldDifference", "Flow", "FlowResult", "StepVerdict")


def __getattr__(name: str) -> Any:
    if name in _API:
        from flowproof.doors import api

        return getattr(api, name)
    raise AttributeError(f"module 'flowproof' has no attribute {name!r}")

"""What the operating system can do to keep an agent in bounds, behind one façade per
capability: each answers on every platform, doing nothing where the kernel offers nothing."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flowproof.spec.load import LoadedSpec


def adopt_orphans() -> bool:
    """Make this process the one the agent's orphans are re-parented to, so that a daemonised
    grandchild (setsid, double fork, parent gone) stays findable as flowproof's child.

    Linux only (a child subreaper); elsewhere nothing happens. Returns whether orphans are
    adopted from now on. Idempotent, and inherited by no child.
    """
    if sys.platform != "linux":
        return False
    from flowproof.containment._linux import set_child_subreaper

    return set_child_subreaper()


def adopts_orphans() -> bool:
    """Whether this process is, right now, the one the agent's orphans are re-parented to
    (adopt_orphans succeeded here, or someone made it so)."""
    if sys.platform != "linux":
        return False
    from flowproof.containment._linux import is_child_subreaper

    return is_child_subreaper()


def engages_egress(loaded: LoadedSpec) -> bool:
    """Whether a flow engages egress containment: it declares `agent.allow_egress` or has an
    `assert_no_egress` step. Here, apart from containment/engage.py, so that a flow that does
    not (most) loads none of containment's machinery to find that out."""
    from flowproof.assertions.egress import KIND

    return bool(loaded.spec.agent.allow_egress) or any(
        step.kind == KIND for step in loaded.assertions
    )

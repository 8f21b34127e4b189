"""What the operating system can do to keep an agent in bounds, behind one façade per
capability: each answers on every platform, doing nothing where the kernel offers nothing."""

from __future__ import annotations

import sys


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

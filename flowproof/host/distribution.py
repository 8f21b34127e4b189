"""One flowproof per environment: the command and the pytest plugin refuse to run beside the
package index's other `flowproof`.

flowproof installs from the package index as `flowproof-cli`. The name `flowproof` there
belongs to another project, whose wheel also installs an import package `flowproof` and a
`flowproof` command. Installed into the same environment, the two overwrite each other's
files: whichever came last owns the command and `flowproof/__init__.py`, and neither works as
its documentation says. So every start of the command checks, and a collision is a
configuration error (exit 2) that names both distributions and the fix; the pytest plugin
checks when asked to run a flow, and stops the session with the same message.

The check runs on every start, `--version` included, so it must cost next to nothing: one
listing of the folder this package was installed into, looking for a metadata folder named
`flowproof-<version>.dist-info` (ours is `flowproof_cli-<version>.dist-info`). Only when one is
there is its metadata read. The frozen engine carries no distribution metadata, and an
editable install lives outside site-packages; neither is checked.
"""

from __future__ import annotations

import os
import sys

OUR_DISTRIBUTION = "flowproof-cli"
OTHER_DISTRIBUTION = "flowproof"
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
# installers write the name as normalised (`flowproof-`) or as the project spelled it
_OTHER_METADATA_PREFIXES = ("flowproof-", "Flowproof-", "FlowProof-")
_OUR_METADATA_PREFIX = "flowproof_cli-"


def installed_into() -> str:
    """The folder holding the `flowproof` package (site-packages, for an installed wheel)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # flowproof/host/..
    return os.path.dirname(package)


def other_flowproof_metadata(folder: str) -> list[str]:
    """The metadata folders in `folder` named like the other project's distribution."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(name for name in names if _named_flowproof(name))


def _named_flowproof(name: str) -> bool:
    # str methods on a tuple, no lowering of every name: this runs over all of site-packages
    return name.startswith(_OTHER_METADATA_PREFIXES) and name.endswith(_METADATA_SUFFIXES)


def second_flowproof() -> str | None:
    """What is wrong when another project's `flowproof` shares this environment, else None."""
    if getattr(sys, "frozen", False):
        return None
    folder = installed_into()
    found = other_flowproof_metadata(folder)
    return collision_message(folder, found) if found else None


def refuse_a_second_flowproof() -> None:
    """The command's check: exit 2, saying what to do, on a collision."""
    message = second_flowproof()
    if message is None:
        return
    from flowproof.core.errors import EXIT_CONFIG

    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(EXIT_CONFIG)


def collision_message(folder: str, found: list[str]) -> str | None:
    """The error for a real collision, read from the metadata; None when the folder's name
    promised the other distribution but its metadata names something else."""
    from importlib.metadata import PathDistribution
    from pathlib import Path

    theirs = [PathDistribution(Path(folder, name)) for name in found]
    versions = [
        distribution.version or "unknown"
        for distribution in theirs
        if _canonical(distribution.metadata["Name"] or "") == OTHER_DISTRIBUTION
    ]
    if not versions:
        return None
    ours = _our_version(folder)
    return (
        f"two distributions install the `flowproof` package and command into {folder}: "
        f"{OUR_DISTRIBUTION} {ours} (this flowproof, which tests AI agents by recording and "
        f"replaying their model traffic) and {OTHER_DISTRIBUTION} {', '.join(versions)} "
        "(another project, which has that name on the package index). They overwrite each "
        "other's files, so neither works reliably. Fix, in this environment: "
        f"`pip uninstall {OTHER_DISTRIBUTION}`, then `pip install --force-reinstall "
        f"{OUR_DISTRIBUTION}` (with uv: `uv pip uninstall {OTHER_DISTRIBUTION}`, then "
        f"`uv pip install --reinstall {OUR_DISTRIBUTION}`; in a uv project: `uv remove "
        f"{OTHER_DISTRIBUTION}`, then `uv sync --reinstall-package {OUR_DISTRIBUTION}`)"
    )


def _our_version(folder: str) -> str:
    for name in sorted(os.listdir(folder)):
        if name.lower().startswith(_OUR_METADATA_PREFIX) and name.endswith(".dist-info"):
            return name[len(_OUR_METADATA_PREFIX) : -len(".dist-info")]
    return "(version unknown)"


def _canonical(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()

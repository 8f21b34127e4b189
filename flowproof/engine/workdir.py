"""`agent.cwd`: where a command agent runs, and the rule that keeps flowproof's files out of it.

Many agents read or list their working directory (coding agents put a tree of it into their
prompt). If flowproof wrote its own files there, its trace and run records would change what
the agent sees between record and replay. So when a flow gives the agent a directory of its
own, flowproof refuses to run it (a configuration error, exit 2) if anything flowproof writes
(the trace beside the spec and its temporary file, the run records and a crash's traceback)
would land inside that directory. The one exemption is the directory flowproof was started in:
without `agent.cwd` the agent runs there, as it always has, and `.flowproof/runs/` sits there
by the user's own choice. Report files a user names (`--html`, `--junit`, ...) are theirs, not
flowproof's, and are not checked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from flowproof.core.errors import SpecError
from flowproof.spec.load import LoadedSpec
from flowproof.spec.refs import resolve


def agent_cwd(loaded: LoadedSpec, environ: Mapping[str, str]) -> Path | None:
    """The agent's working directory, absolute; None when the spec gives none (flowproof's own).
    A relative `agent.cwd` starts at the spec's directory."""
    raw = loaded.spec.agent.cwd
    if raw is None:
        return None
    given = Path(resolve(raw, environ)).expanduser()
    path = Path(os.path.abspath(given if given.is_absolute() else loaded.path.parent / given))
    if not path.is_dir():
        raise SpecError(
            loaded.path,
            loaded.line_of("agent", "cwd"),
            f"agent.cwd: {path} is not a directory",
            "create it, or correct the path (a relative one starts at the spec's directory)",
        )
    return path


def refuse_writes_inside(
    loaded: LoadedSpec,
    cwd: Path | None,
    started_in: Path,
    writes: Sequence[tuple[str, Path]],
) -> None:
    """Refuse a flow whose agent cwd holds one of `writes` (what, where flowproof writes it),
    unless that cwd is `started_in`."""
    if cwd is None:
        return
    home = cwd.resolve()
    if home == started_in.resolve():
        return
    for what, target in writes:
        place = target.resolve()
        if place == home or home in place.parents:
            raise SpecError(
                loaded.path,
                loaded.line_of("agent", "cwd"),
                f"agent.cwd {cwd} holds {what} ({target}), which flowproof writes; an agent that "
                "reads or lists its directory would see flowproof's own files",
                "give the agent a directory of its own that holds neither the specs nor the run "
                "records (e.g. `cwd: ../workspace`), or start flowproof in that directory",
            )

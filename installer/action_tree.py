"""Assemble the tree of the flowproof/action repository, where `uses: flowproof/action@v1`
resolves: GitHub looks for action.yml at the root of the repository the `uses:` names.

    python installer/action_tree.py OUT      # OUT: a new or empty folder

The tree is what the composite action runs and nothing else: action.yml, the step scripts
(action/*.sh) and the installer they call (installer/install.sh), which pins the engine
version the action installs by default, plus a README pointing back here. release.yml commits
it to flowproof/action on each release and moves the major tag; tests/action run against it
with FLOWPROOF_ACTION_ROOT=OUT, the same tests that prove the action in this repository.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Paths relative to the repository root, copied as they are (modes kept: the scripts run).
FILES = ("action.yml", "installer/install.sh")
FOLDERS = ("action",)
PINNED = re.compile(r'^FLOWPROOF_RELEASED_VERSION="([^"]+)"$', re.MULTILINE)

README = """\
# flowproof/action

The GitHub Action of [flowproof](https://github.com/flowproof/flowproof): replay your agent's
recorded flows on every pull request, with no model, no key and no network.

```yaml
      - uses: flowproof/action@v1
        with:
          specs: specs/
```

This release installs flowproof {version} by default. Inputs, outputs and examples:
[docs/action.md](https://github.com/flowproof/flowproof/blob/v{version}/docs/action.md).

This repository is assembled from flowproof's own (`installer/action_tree.py`) on each release;
change the action there, not here.
"""


class TreeError(Exception):
    pass


def package_version() -> str:
    text = (ROOT / "flowproof" / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if found is None:
        raise TreeError("no __version__ line in flowproof/_version.py")
    return found.group(1)


def pinned_version(installer: Path) -> str:
    found = PINNED.search(installer.read_text(encoding="utf-8"))
    if found is None:
        raise TreeError(f"{installer} has no FLOWPROOF_RELEASED_VERSION line")
    return found.group(1)


def assemble(out: Path, source: Path = ROOT) -> str:
    """Write the action's tree into `out`; returns the engine version it pins."""
    if out.exists() and any(out.iterdir()):
        raise TreeError(f"{out} is not empty; give a new or empty folder")
    version = package_version()
    pinned = pinned_version(source / "installer" / "install.sh")
    if pinned != version:
        raise TreeError(
            f"installer/install.sh pins {pinned} but flowproof is {version}; "
            "set FLOWPROOF_RELEASED_VERSION to the release's version"
        )
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, out / name)
    for name in FOLDERS:
        shutil.copytree(source / name, out / name)
    (out / "README.md").write_text(README.format(version=version), encoding="utf-8")
    return version


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a new or empty folder")
    args = parser.parse_args(argv)
    try:
        version = assemble(args.out)
    except TreeError as error:
        print(f"action_tree: {error}", file=sys.stderr)
        return 2
    print(f"action_tree: {args.out} holds flowproof/action for flowproof {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The action's root: this checkout, or the tree installer/action_tree.py assembles for the
flowproof/action repository (FLOWPROOF_ACTION_ROOT=<tree>), so the same tests prove both."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import ROOT

ROOT_VARIABLE = "FLOWPROOF_ACTION_ROOT"
ACTION_ROOT = Path(os.environ.get(ROOT_VARIABLE) or ROOT).resolve()

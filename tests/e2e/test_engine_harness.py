"""Every end-to-end test runs flowproof through one function, whose engine the environment picks."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from flowproof._version import __version__
from tests.conftest import ENGINE_VARIABLE, ROOT, engine_command, flowproof


def test_the_engine_named_in_the_environment_is_the_one_that_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    wrapper = tmp_path / "engine"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'echo "$* engine=${{{ENGINE_VARIABLE}:-}}" >> {shlex.quote(str(calls))}\n'
        f"PYTHONPATH={shlex.quote(str(ROOT))} "
        f'exec {shlex.quote(sys.executable)} -m flowproof "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv(ENGINE_VARIABLE, str(wrapper))
    result = flowproof("--version", cwd=tmp_path)
    assert (result.code, result.stdout) == (0, f"flowproof {__version__}\n"), result.output
    assert calls.read_text() == "--version engine=\n", (
        "the variable is the harness's, not the engine's"
    )


def test_without_the_variable_the_engine_is_this_interpreter() -> None:
    assert engine_command("") == (sys.executable, "-m", "flowproof")


@pytest.mark.parametrize(
    ("setting", "command"),
    [
        ("npx flowproof", ("npx", "flowproof")),
        ("dist/flowproof/flowproof", (str(ROOT / "dist" / "flowproof" / "flowproof"),)),
        ("/opt/fp/flowproof --quiet 'a b'", ("/opt/fp/flowproof", "--quiet", "a b")),
    ],
)
def test_the_setting_is_split_like_a_shell_line_from_the_repository_root(
    setting: str, command: tuple[str, ...]
) -> None:
    assert engine_command(setting) == command

"""The Python channel, proven the way a Python team meets it (what `make python-channel` runs,
after `make python-dist` has built dist/python/).

    python installer/python_channel.py [--dists dist/python] [--keep]

1. `twine check --strict` on every dist;
2. the wheel pip picks on this machine, `pip install`ed with its dependencies from the package
   index into a fresh venv (with `openai`, which the demo agent imports, and `pytest`): the
   venv's `flowproof --version`, the package imported from the venv (not this checkout), then
   in a COPY of examples/agent-demo outside the repository, `flowproof run` replaying the demo
   and `pytest --flowproof` running the same spec as a test;
3. the sdist, the same way, in a venv of its own (built by pip, as a user's pip would);
4. `uv tool install` of the py3-none-any wheel (uv from the package index, in the build venv),
   tool and its bin folder kept in a scratch folder, and the demo replayed through the tool's
   `flowproof`.

Any step that fails stops the script with exit 1, naming the step, the command, its exit code
and the end of its output. Each step's time is printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from installer.build import ROOT, version  # noqa: E402

DISTS = ROOT / "dist" / "python"
DEMO = ROOT / "examples" / "agent-demo"
DEMO_SPECS = "examples/agent-demo/specs/"
DEMO_PASSED = "PASS  Travel assistant books the cheapest flight to Nairobi"
# the demo agent is an openai SDK program; pytest runs the plugin
AGENT_AND_TEST_PACKAGES = ("openai", "pytest")
# what a developer's shell may hold that would point the run elsewhere
STRIPPED_PREFIXES = ("FLOWPROOF_", "OPENAI_", "ANTHROPIC_", "PYTHON", "VIRTUAL_ENV", "UV_", "PIP_")


class ChannelError(Exception):
    """A step of the channel failed; the message says which and why."""


def log(line: str) -> None:
    print(f"python-channel: {line}", file=sys.stderr, flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    started = time.monotonic()
    log(f"{name} ...")
    try:
        yield
    except ChannelError as error:
        raise ChannelError(f"{name}: {error}") from None
    log(f"{name}: ok ({time.monotonic() - started:.1f} s)")


def clean_environment(*bin_folders: Path) -> dict[str, str]:
    """This shell's environment without anything that would redirect flowproof, pip or the
    agent (PYTHONPATH would import this checkout), with `bin_folders` first on PATH. The pip
    settings of the machine (its config file) still apply; PIP_* variables only add noise."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(STRIPPED_PREFIXES) or name in ("PIP_CERT", "PIP_DEFAULT_TIMEOUT")
    }
    kept["PATH"] = os.pathsep.join([*map(str, bin_folders), kept.get("PATH", "")])
    return kept


def run(
    command: list[str | Path],
    *,
    cwd: Path,
    env: dict[str, str],
    expect: tuple[str, ...] = (),
) -> str:
    words = [str(part) for part in command]
    log(f"  $ {' '.join(words)}")
    done = subprocess.run(
        words, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise ChannelError(f"`{' '.join(words)}` exited {done.returncode}:\n{tail(output)}")
    missing = [text for text in expect if text not in output]
    if missing:
        raise ChannelError(f"`{' '.join(words)}` did not print {missing!r}:\n{tail(output)}")
    return done.stdout


def tail(output: str, lines: int = 40) -> str:
    return "\n".join("    " + line for line in output.rstrip().splitlines()[-lines:])


def the_dists(folder: Path) -> tuple[Path, Path, Path]:
    """(sdist, the wheel pip installs here, the pure wheel)."""
    sdists = sorted(folder.glob("flowproof_cli-*.tar.gz"))
    pure = sorted(folder.glob("flowproof_cli-*-py3-none-any.whl"))
    compiled = sorted(folder.glob("flowproof_cli-*-abi3-manylinux*.whl"))
    if len(sdists) != 1 or len(pure) != 1:
        raise ChannelError(
            f"{folder} should hold one flowproof_cli sdist and one py3-none-any wheel "
            f"(found {[p.name for p in [*sdists, *pure]]}); run `make python-dist`"
        )
    here = compiled[0] if compiled and sys.platform == "linux" else pure[0]
    return sdists[0], here, pure[0]


def fresh_venv(home: Path, scratch: Path, *installables: str | Path) -> Path:
    """A venv at `home` with `installables` pip-installed from the package index; its bin."""
    environment = clean_environment()
    run([sys.executable, "-m", "venv", home], cwd=scratch, env=environment)
    python = home / "bin" / "python"
    run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *installables],
        cwd=scratch,
        env=environment,
    )
    return home / "bin"


def demo_project(scratch: Path, name: str) -> Path:
    """A copy of examples/agent-demo at the same relative path, outside the repository (so no
    pytest configuration of this repository applies)."""
    project = scratch / name
    shutil.copytree(
        DEMO, project / "examples" / "agent-demo", ignore=shutil.ignore_patterns("__pycache__")
    )
    return project


def check_the_install(bin_folder: Path, scratch: Path, compiled: bool) -> None:
    environment = clean_environment(bin_folder)
    printed = run([bin_folder / "flowproof", "--version"], cwd=scratch, env=environment)
    if printed != f"flowproof {version()}\n":
        raise ChannelError(f"`flowproof --version` printed {printed!r}")
    where = run(
        [bin_folder / "python", "-c", "import flowproof; print(flowproof.__file__)"],
        cwd=scratch,
        env=environment,
    )
    if not where.startswith(str(bin_folder.parent)):
        raise ChannelError(f"`import flowproof` found {where.strip()}, not the venv's install")
    if compiled:
        run(
            [bin_folder / "python", "-c", "import flowproof.containment._fsloop"],
            cwd=scratch,
            env=environment,
        )


def replay_the_demo(flowproof: Path, agent_bin: Path, project: Path) -> None:
    """`flowproof run` of the demo: the agent's `python3` is `agent_bin`'s (it has openai)."""
    environment = clean_environment(flowproof.parent, agent_bin)
    run(
        [flowproof, "run", DEMO_SPECS],
        cwd=project,
        env=environment,
        expect=(DEMO_PASSED, "3 of 3 turns served", "flows: 1 passed, 0 failed"),
    )


def pytest_the_demo(bin_folder: Path, project: Path) -> None:
    run(
        [bin_folder / "pytest", "--flowproof", DEMO_SPECS, "-p", "no:cacheprovider", "-q"],
        cwd=project,
        env=clean_environment(bin_folder),
        expect=("1 passed",),
    )


def pip_channel(kind: str, dist: Path, scratch: Path, compiled: bool) -> Path:
    with step(f"pip install {dist.name} into a fresh venv"):
        bin_folder = fresh_venv(scratch / f"venv-{kind}", scratch, dist, *AGENT_AND_TEST_PACKAGES)
        check_the_install(bin_folder, scratch, compiled)
    project = demo_project(scratch, f"project-{kind}")
    with step(f"{kind}: flowproof run {DEMO_SPECS} (a copy of the demo)"):
        replay_the_demo(bin_folder / "flowproof", bin_folder, project)
    with step(f"{kind}: pytest --flowproof {DEMO_SPECS}"):
        pytest_the_demo(bin_folder, project)
    return bin_folder


def uv_tool_channel(wheel: Path, agent_bin: Path, scratch: Path) -> None:
    tools, bin_folder = scratch / "uv-tools", scratch / "uv-bin"
    environment = clean_environment()
    environment |= {"UV_TOOL_DIR": str(tools), "UV_TOOL_BIN_DIR": str(bin_folder)}
    with step(f"uv tool install {wheel.name}"):
        run(
            [sys.executable, "-m", "uv", "tool", "install", "--python", sys.executable, wheel],
            cwd=scratch,
            env=environment,
        )
        printed = run([bin_folder / "flowproof", "--version"], cwd=scratch, env=environment)
        if printed != f"flowproof {version()}\n":
            raise ChannelError(f"the tool's `flowproof --version` printed {printed!r}")
    project = demo_project(scratch, "project-uv-tool")
    with step(f"uv tool: flowproof run {DEMO_SPECS}"):
        replay_the_demo(bin_folder / "flowproof", agent_bin, project)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="installer/python_channel.py", description=__doc__)
    parser.add_argument("--dists", type=Path, default=DISTS, help="the built dists")
    parser.add_argument("--keep", action="store_true", help="keep the venvs and project copies")
    arguments = parser.parse_args(argv)
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="flowproof-python-channel-"))
    try:
        sdist, wheel, pure = the_dists(arguments.dists)
        compiled = wheel != pure
        with step("twine check --strict"):
            dists = sorted({sdist, wheel, pure})
            command: list[str | Path] = [sys.executable, "-m", "twine", "check", "--strict"]
            run([*command, *dists], cwd=ROOT, env=clean_environment())
        wheel_bin = pip_channel("wheel", wheel, scratch, compiled)
        pip_channel("sdist", sdist, scratch, compiled=sys.platform == "linux" and compiled)
        uv_tool_channel(pure, wheel_bin, scratch)
    except ChannelError as error:
        log(f"FAILED: {error}")
        log(f"the venvs and projects are kept in {scratch}")
        return 1
    log(f"every step passed in {time.monotonic() - started:.0f} s")
    if arguments.keep:
        log(f"kept in {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

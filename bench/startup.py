"""Start-up cost of flowproof in each channel, against a bare interpreter in the same run.

    python bench/startup.py [--runs 20] [--json FILE] [--check]
                            [--launcher "npx --prefer-offline flowproof"]

Measures, interleaved (one run of each command per round, so load on a shared machine falls
on all of them alike), the wall time of:

- `python -c pass`, the baseline every ratio is taken against;
- `python -m flowproof --version` (this checkout, from source);
- the frozen engine `dist/flowproof/flowproof --version` (`make freeze`), when built;
- the npm launcher (`--launcher`, e.g. `npx flowproof`), when given;
- `python -c "import flowproof.engine.run"`: what a real run imports before it starts.

Prints a table of medians and ratios, for wall time and for CPU time (user + system, from
wait4: on a shared machine wall time includes waiting for a core, CPU time does not), writes
the same as JSON with --json, and with --check exits 1 when a channel's wall-time ratio is over
its target (frozen <= 3x the baseline, launcher <= 5x).
`--version` must stay cheap: the CLI imports click only and every subcommand imports the
engine lazily.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FROZEN = ROOT / "dist" / "flowproof" / ("flowproof.exe" if sys.platform == "win32" else "flowproof")
TARGETS = {"frozen --version": 3.0, "launcher --version": 5.0}
"""Highest allowed ratio to `python -c pass`, per channel."""


@dataclass
class Figure:
    name: str
    command: list[str]
    samples_ms: list[float]
    cpu_samples_ms: list[float]
    median_ms: float = 0.0
    ratio: float = 0.0
    cpu_median_ms: float = 0.0
    cpu_ratio: float = 0.0
    target: float | None = None

    @property
    def over_target(self) -> bool:
        return self.target is not None and self.ratio > self.target


def commands(launcher: str | None) -> dict[str, list[str]]:
    python = sys.executable
    chosen = {
        "python -c pass": [python, "-c", "pass"],
        "python -m flowproof --version": [python, "-m", "flowproof", "--version"],
    }
    if FROZEN.is_file():
        chosen["frozen --version"] = [str(FROZEN), "--version"]
    # The npm launcher: pass --launcher "npx --prefer-offline flowproof" (or the path of
    # node_modules/.bin/flowproof) once the launcher package is installed.
    if launcher:
        chosen["launcher --version"] = [*shlex.split(launcher), "--version"]
    chosen["import flowproof.engine.run"] = [python, "-c", "import flowproof.engine.run"]
    return chosen


def measure(chosen: dict[str, list[str]], runs: int, warmup: int = 2) -> list[Figure]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's flowproof
    figures = {name: Figure(name, command, [], []) for name, command in chosen.items()}
    for round_ in range(warmup + runs):
        for figure in figures.values():
            wall, cpu = run_once(figure.command, env)
            if round_ >= warmup:
                figure.samples_ms.append(wall)
                figure.cpu_samples_ms.append(cpu)
    baseline = figures["python -c pass"]
    wall_floor = statistics.median(baseline.samples_ms)
    cpu_floor = statistics.median(baseline.cpu_samples_ms)
    for figure in figures.values():
        figure.median_ms = statistics.median(figure.samples_ms)
        figure.ratio = figure.median_ms / wall_floor
        figure.cpu_median_ms = statistics.median(figure.cpu_samples_ms)
        figure.cpu_ratio = figure.cpu_median_ms / cpu_floor
        figure.target = TARGETS.get(figure.name)
    return list(figures.values())


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one run of `command`."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{shlex.join(command)} exited {child.returncode}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def table(figures: list[Figure]) -> str:
    lines = [f"{'command':32} {'wall':>9} {'ratio':>7} {'cpu':>9} {'ratio':>7}  target (wall)"]
    for f in figures:
        target = ""
        if f.target is not None:
            target = f"<= {f.target:.0f}x " + ("OVER" if f.over_target else "ok")
        lines.append(
            f"{f.name:32} {f.median_ms:7.1f}ms {f.ratio:6.2f}x "
            f"{f.cpu_median_ms:7.1f}ms {f.cpu_ratio:6.2f}x  {target}".rstrip()
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--launcher", default=None, help='e.g. "npx --prefer-offline flowproof"')
    arguments = parser.parse_args()
    if not FROZEN.is_file():
        print(
            f"note: {FROZEN.relative_to(ROOT)} not built (`make freeze`); skipped", file=sys.stderr
        )
    figures = measure(commands(arguments.launcher), arguments.runs)
    print(table(figures))
    if arguments.json:
        machine = {"platform": platform.platform(), "cpus": os.cpu_count(), "runs": arguments.runs}
        document = {"machine": machine, "figures": [asdict(f) for f in figures]}
        arguments.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 1 if arguments.check and any(f.over_target for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())

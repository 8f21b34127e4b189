"""Start-up cost of `flowproof --version`, against a bare interpreter in the same run.

    python bench/startup.py [--runs 20]

Prints the median wall time of each and the ratio. `--version` must stay cheap: the CLI
imports click only, and every subcommand imports the engine lazily.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def median_seconds(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    baseline = median_seconds([sys.executable, "-c", "pass"], runs)
    version = median_seconds([sys.executable, "-m", "flowproof", "--version"], runs)
    engine = median_seconds([sys.executable, "-c", "import flowproof.engine.run"], runs)
    print(f"python -c pass               {baseline * 1000:7.1f} ms  (baseline)")
    print(f"flowproof --version          {version * 1000:7.1f} ms  ×{version / baseline:.2f}")
    print(f"import flowproof.engine.run  {engine * 1000:7.1f} ms  ×{engine / baseline:.2f}")


if __name__ == "__main__":
    main()

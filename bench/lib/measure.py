"""Running a command and reading its wall and CPU time; medians and ratios; the machine."""

from __future__ import annotations

import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def bench_env(**extra: str) -> dict[str, str]:
    """The environment every measured process gets: this checkout's flowproof and bench, no
    developer key, proxy or base URL."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "ANTHROPIC_", "FLOWPROOF_"))
        and name.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
    }
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_once(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float]:
    """Wall and CPU (user + system of the child and the children it waited for) ms."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code
    if code != 0:
        raise SystemExit(f"{shlex.join(command)} exited {code}:\n{errors.decode()[-3000:]}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summary(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    return {
        "median": median(samples),
        "min": ordered[0] if ordered else None,
        "max": ordered[-1] if ordered else None,
        "n": len(samples),
        "samples": [round(s, 3) for s in samples],
    }


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "load_average_at_start": load_average(),
    }

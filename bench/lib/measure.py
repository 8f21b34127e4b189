"""Running a command and reading its wall and CPU time; medians and ratios; the machine."""

from __future__ import annotations

import os
import platform
import resource
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


def run_tree(
    command: list[str], env: dict[str, str], cwd: Path = ROOT, timeout: float = 900
) -> tuple[float, float]:
    """Wall and CPU ms of `command` and every process under it: the user + system time this
    process's reaped children gained while it ran (getrusage(RUSAGE_CHILDREN) before and after),
    which holds the agent and the agent's own children once each parent has waited for them."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"{shlex.join(command)} exited {done.returncode}:\n{done.stderr.decode()[-3000:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu * 1000


def spread(samples: list[float]) -> dict[str, Any]:
    """The median and the interquartile range: how far apart the middle half of the rounds
    lie, which says whether a difference of two noisy figures means anything."""
    if not samples:
        return {"median": None, "q1": None, "q3": None, "min": None, "max": None, "n": 0}
    ordered = sorted(samples)
    quartiles = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return {
        "median": statistics.median(ordered),
        "q1": quartiles[0],
        "q3": quartiles[2],
        "min": ordered[0],
        "max": ordered[-1],
        "n": len(ordered),
        "samples": [round(s, 3) for s in samples],
    }


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

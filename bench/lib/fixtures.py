"""The flow the bench replays: bench/agent10.py recorded once against the scripted upstream
(tests/upstream/scripted.py) by `flowproof record`, then copied as often as a section needs.

The agent's loop runs until the model stops asking for the lookup tool, so the number of turns
is the script's, not the agent's: the ten-turn and three-turn flows are the same code."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from bench.lib.measure import PYTHON, ROOT, bench_env
from tests.upstream.scripted import ScriptedUpstream, calls, text, tool_call

TURNS = 10
PROMPT = "Plan my nine-leg trip to Nairobi, one lookup per leg."
AGENT = ROOT / "bench" / "agent10.py"


def script(turns: int = TURNS) -> list[Any]:
    """The model's answers for one run of `turns` turns: a lookup per turn but the last."""
    steps: list[Any] = [
        calls(tool_call("lookup", {"step": i}, call_id=f"call_{i}")) for i in range(turns - 1)
    ]
    steps.append(text(f"Your itinerary is booked: {turns - 1} legs, all confirmed."))
    return steps


def spec_text(
    title: str = "Ten-turn itinerary", turns: int = TURNS, command: str | None = None
) -> str:
    """The flow's spec; `command` runs another agent with the same loop (bench/agent_stdlib.py)."""
    agent = command or f"{PYTHON} {AGENT}"
    return f"""\
name: {title}
app: agent
agent:
  command: "{agent}"
tools:
  - name: lookup
steps:
  - prompt: {PROMPT}
  - assert_tool_call: lookup where step equals {turns - 2}
  - assert: reply contains booked
"""


def record(directory: Path, turns: int = TURNS, command: str | None = None) -> Path:
    """Record the flow of `turns` turns into directory/specs/flow.yaml + flow.trace.json."""
    specs = directory / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    (specs / "flow.yaml").write_text(spec_text(turns=turns, command=command))
    upstream = ScriptedUpstream(script=script(turns))
    upstream.start()
    try:
        env = bench_env(
            FLOWPROOF_AGENT_UPSTREAM=upstream.base_url, FLOWPROOF_AGENT_KEY="sk-bench-0000"
        )
        done = subprocess.run(
            [PYTHON, "-m", "flowproof", "record", "specs"],
            cwd=directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        upstream.stop()
    if done.returncode != 0:
        raise SystemExit(f"recording the bench flow failed:\n{done.stdout}{done.stderr}")
    trace = specs / "flow.trace.json"
    assert len(json.loads(trace.read_text())["lanes"]["model"]) == turns
    return trace


def suite(
    recorded: Path, directory: Path, flows: int, turns: int = TURNS, command: str | None = None
) -> Path:
    """`flows` copies of the recorded flow (spec + trace) under directory/specs."""
    specs = directory / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    source = recorded / "specs"
    for number in range(flows):
        (specs / f"flow{number:03d}.yaml").write_text(
            spec_text(f"Itinerary {number:03d}", turns, command)
        )
        shutil.copyfile(source / "flow.trace.json", specs / f"flow{number:03d}.trace.json")
    return directory


def recorded_turns(trace: Path) -> list[dict[str, Any]]:
    """The model lane of a trace as plain JSON: [{dialect, request, response}, ...]."""
    return list(json.loads(trace.read_text())["lanes"]["model"])

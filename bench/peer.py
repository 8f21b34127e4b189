"""The best peer: the package index's `flowproof` 0.23.28, a different project of the same name
(a Rust engine in a Python wheel), installed into a venv of its own and run on loopback only.

    python bench/peer.py [--venv /tmp/peer]      # install it if missing and say where it is

Both engines read the same spec (`name`, `app: agent`, `agent.command`, `tools`, `steps`), each
writes its own trace beside it (`<stem>.trace.jsonl` for the peer, `<name>.trace.json` for
ours), so each gets a directory of its own. Every process of the comparison, ours included,
runs inside one network namespace that has loopback only (`unshare -n`, as tests/netns.py
does): the peer asks a public API for its latest release unless FLOWPROOF_NO_UPDATE_CHECK is
set, and the namespace makes sure that nothing it does reaches the network. Recording happens
in a helper process inside the namespace (`python bench/peer.py _record ...`) that starts the
scripted upstream (tests/upstream/scripted.py) beside the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: this checkout's bench and tests packages
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.lib import fixtures
from bench.lib.measure import PYTHON, ROOT, bench_env

VERSION = "0.23.28"
VENV = Path(os.environ.get("BENCH_PEER_VENV", "/tmp/peer"))
AGENT = ROOT / "bench" / "agent_stdlib.py"


@dataclass(frozen=True)
class Peer:
    """The peer's command, or why there is none."""

    binary: Path | None
    reason: str = ""


def find(venv: Path = VENV, install: bool = False) -> Peer:
    """The peer's `flowproof` in `venv`, installed there first when `install` and missing."""
    binary = venv / "bin" / "flowproof"
    if not binary.is_file() and install:
        reason = _install(venv)
        if reason:
            return Peer(None, reason)
    if not binary.is_file():
        return Peer(
            None,
            f"the peer is not installed in {venv} (python3 -m venv {venv} && "
            f"{venv}/bin/pip install flowproof=={VERSION}; or run without --no-peer-install)",
        )
    done = subprocess.run(
        [str(binary), "--version"], env=peer_env(), capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0 or VERSION not in done.stdout:
        return Peer(None, f"{binary} --version said {done.stdout.strip()!r}, not {VERSION}")
    return Peer(binary)


def _install(venv: Path) -> str:
    """Create the venv and install the peer from the package index; '' or why it failed."""
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "pip"), "install", "--quiet", f"flowproof=={VERSION}"],
    ]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"installing the peer failed: {error}"
        if done.returncode != 0:
            return f"installing the peer failed ({' '.join(step)}): {done.stderr.strip()[-500:]}"
    return ""


def peer_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH (the peer's wheel has a `flowproof` package too, and ours must not shadow
    it), no update check, no developer key, proxy or base URL."""
    env = bench_env(FLOWPROOF_NO_UPDATE_CHECK="1", **extra)
    env.pop("PYTHONPATH", None)
    return env


class LoopbackNamespace:
    """A network namespace with only loopback up, held open by a sleeping process; `wrap`
    prefixes a command so that it runs inside it."""

    def __init__(self) -> None:
        self.holder: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        """'' when the namespace is up, else why not."""
        if shutil.which("unshare") is None or shutil.which("nsenter") is None:
            return "unshare/nsenter not found: the peer cannot be kept off the network"
        self.holder = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", "ip link set lo up && echo up && exec sleep 86400"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.holder.stdout is not None
        if self.holder.stdout.readline() != b"up\n":
            self.holder.wait(10)
            assert self.holder.stderr is not None
            error = self.holder.stderr.read().decode().strip()
            self.holder = None
            return f"no loopback-only network namespace (unshare -n: {error or 'failed'})"
        return ""

    def wrap(self, command: list[str]) -> list[str]:
        assert self.holder is not None
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net", *command]

    def stop(self) -> None:
        if self.holder is not None:
            self.holder.kill()
            self.holder.wait()
            self.holder = None


def spec_text(title: str, turns: int) -> str:
    """One spec both engines accept: the bench's flow, run by the stdlib agent."""
    return fixtures.spec_text(title, turns, f"{PYTHON} -S {AGENT}")


def write_specs(directory: Path, flows: int, turns: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    specs = []
    for number in range(flows):
        spec = directory / f"flow{number:03d}.flow.yaml"
        spec.write_text(spec_text(f"Stdlib itinerary {number:03d}", turns))
        specs.append(spec)
    return specs


def record_both(
    namespace: LoopbackNamespace, peer: Path, work: Path, flows: int, turns: int
) -> tuple[Path, Path]:
    """`flows` copies of the stdlib agent's spec, recorded by the peer into work/peer and by
    ours into work/ours, each against the scripted upstream, inside the namespace."""
    directories = (work / "peer", work / "ours")
    for directory in directories:
        write_specs(directory, flows, turns)
    command = [PYTHON, str(Path(__file__).resolve()), "_record", str(peer), str(work), str(turns)]
    done = subprocess.run(
        namespace.wrap(command),
        env=bench_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"recording the peer comparison failed:\n{done.stdout}{done.stderr}")
    peer_traces = sorted(directories[0].glob("*.trace.jsonl"))
    our_traces = sorted(directories[1].glob("*.trace.json"))
    if len(peer_traces) != flows or len(our_traces) != flows:
        raise SystemExit(
            f"recording the peer comparison wrote {len(peer_traces)} peer and "
            f"{len(our_traces)} flowproof traces, not {flows} each:\n{done.stdout}{done.stderr}"
        )
    return directories


def run_commands(
    namespace: LoopbackNamespace, peer: Path, work: Path
) -> dict[str, tuple[list[str], dict[str, str], Path]]:
    """The measured commands: each engine replaying its own directory, in the namespace; ours
    both one flow at a time (as the peer runs a suite) and as `run DIR` runs by default (one
    flow per CPU at a time)."""
    ours = [PYTHON, "-m", "flowproof", "run"]
    return {
        "peer": (namespace.wrap([str(peer), "run", "."]), peer_env(), work / "peer"),
        "flowproof": (namespace.wrap([*ours, "-j", "1", "."]), bench_env(), work / "ours"),
        "flowproof-default": (namespace.wrap([*ours, "."]), bench_env(), work / "ours"),
    }


def _model(turns: int) -> Any:
    """A scripted model that decides from the request (the number of tool results in it), so
    one upstream serves any number of flows, in any order."""
    from tests.upstream.scripted import calls, text, tool_call

    def step(body: dict[str, Any]) -> dict[str, Any]:
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        if done < turns - 1:
            return calls(tool_call("lookup", {"step": done}, call_id=f"call_{done}"))
        return text(f"Your itinerary is booked: {turns - 1} legs, all confirmed.")

    return step


def _record_inside(peer: Path, work: Path, turns: int) -> int:
    """Inside the namespace: the scripted upstream, then the peer's `record` of each spec and
    ours of the whole directory."""
    from tests.upstream.scripted import ScriptedUpstream

    specs = sorted((work / "peer").glob("*.flow.yaml"))
    upstream = ScriptedUpstream(script=[_model(turns)] * (turns * len(specs) * 2))
    upstream.start()
    upstream_env = {"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": "sk-0"}
    try:
        for spec in specs:
            done = subprocess.run(
                [str(peer), "record", spec.name, "--headless", "--recording-detail", "off"],
                env=peer_env(**upstream_env),
                cwd=spec.parent,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                print(f"peer record {spec.name}:\n{done.stdout}{done.stderr}", file=sys.stderr)
                return 1
        done = subprocess.run(
            [PYTHON, "-m", "flowproof", "record", "."],
            env=bench_env(**upstream_env),
            cwd=work / "ours",
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            print(f"flowproof record:\n{done.stdout}{done.stderr}", file=sys.stderr)
            return 1
    finally:
        upstream.stop()
    return 0


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "_record":
        return _record_inside(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--venv", type=Path, default=VENV)
    arguments = parser.parse_args()
    peer = find(arguments.venv, install=True)
    print(json.dumps({"binary": str(peer.binary) if peer.binary else None, "reason": peer.reason}))
    return 0 if peer.binary else 2


if __name__ == "__main__":
    sys.exit(main())

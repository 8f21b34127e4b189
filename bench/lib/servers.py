"""Starting bench/proxy_server.py and reading its lines."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from bench.lib.measure import PYTHON, ROOT, bench_env

SERVER = ROOT / "bench" / "proxy_server.py"


class Server:
    def __init__(
        self, kind: str, trace: Path, *options: str, env: dict[str, str] | None = None
    ) -> None:
        self.process = subprocess.Popen(
            [PYTHON, str(SERVER), kind, str(trace), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=bench_env(**(env or {})),
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"bench/proxy_server.py {kind} did not start")
        self.started: dict[str, Any] = json.loads(line)
        self.port: int = self.started["port"]

    def stop(self) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        line = self.process.stdout.readline()
        self.process.wait(30)
        return json.loads(line) if line else {}

"""The openai-SDK booking agent (tests/agents/openai_chat_agent.py), which first fetches each
URL in AGENT_FETCH (comma-separated) the way an agent calls a web API, printing the outcome."""

import os
import runpy
import sys
import urllib.request
from pathlib import Path

AGENT = Path(__file__).resolve().parents[1] / "agents" / "openai_chat_agent.py"

for url in filter(None, os.environ.get("AGENT_FETCH", "").split(",")):
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            print("fetched", url, reply.status, reply.read().decode())
    except OSError as exc:
        print("could not fetch", url, exc, file=sys.stderr)

sys.argv = [str(AGENT)]
runpy.run_path(str(AGENT), run_name="__main__")

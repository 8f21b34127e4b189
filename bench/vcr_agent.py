"""bench/agent10.py under vcrpy, one process per flow: `python bench/vcr_agent.py CASSETTE`
replays (record_mode none); `--record` writes the cassette against the live base URL."""

import os
import sys

import vcr
from openai import OpenAI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent10  # noqa: E402


def main():
    recording = "--record" in sys.argv
    cassette = [a for a in sys.argv[1:] if a != "--record"][0]
    with vcr.use_cassette(cassette, record_mode="all" if recording else "none"):
        print(agent10.run(OpenAI(max_retries=0), os.environ["FLOWPROOF_PROMPT"]))


if __name__ == "__main__":
    main()

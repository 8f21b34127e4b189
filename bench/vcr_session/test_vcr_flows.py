"""bench/agent10.py replayed by vcrpy inside one pytest session: BENCH_FLOWS tests, each
one flow, each timing itself into BENCH_TIMES (one line of milliseconds per flow)."""

import os
import sys
import time

import pytest
import vcr
from openai import OpenAI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import agent10  # noqa: E402

FLOWS = int(os.environ.get("BENCH_FLOWS", "5"))


@pytest.mark.parametrize("number", range(FLOWS))
def test_flow(number):
    started = time.perf_counter()
    with vcr.use_cassette(os.environ["BENCH_VCR_CASSETTE"], record_mode="none"):
        reply = agent10.run(OpenAI(max_retries=0), os.environ["FLOWPROOF_PROMPT"])
    elapsed = (time.perf_counter() - started) * 1000
    assert "booked" in reply
    with open(os.environ["BENCH_TIMES"], "a") as times:
        times.write(f"{elapsed}\n")

"""bench/agent10.py replayed by flowproof's in-process fixture inside one pytest session (the
pytest plugin's `flowproof_flow`, docs/pytest.md): BENCH_FLOWS tests, each one flow of the
spec BENCH_FLOWPROOF_SPEC, each timing itself into BENCH_TIMES (one line of milliseconds per
flow). The same loop vcrpy replays in bench/vcr_session, so the two are comparable."""

import os
import sys
import time

import pytest
from openai import OpenAI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import agent10  # noqa: E402

FLOWS = int(os.environ.get("BENCH_FLOWS", "5"))


@pytest.mark.parametrize("number", range(FLOWS))
def test_flow(number, flowproof_flow):
    started = time.perf_counter()
    with flowproof_flow(os.environ["BENCH_FLOWPROOF_SPEC"]) as flow:
        reply = agent10.run(OpenAI(max_retries=0), flow.prompt)  # built inside: the proxy's URL
    elapsed = (time.perf_counter() - started) * 1000
    assert "booked" in reply
    with open(os.environ["BENCH_TIMES"], "a") as times:
        times.write(f"{elapsed}\n")

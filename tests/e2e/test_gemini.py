"""Real Gemini clients (google-genai in Python, @google/genai on node) recorded against the
scripted upstream, then replayed with no model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliResult, agent_command, flowproof
from tests.e2e import booking
from tests.e2e.booking import BOOKING_SCRIPT, KEY, paths_sent, record
from tests.upstream.scripted import ScriptedUpstream

CHECKS = "".join(
    f"  - {line}\n"
    for line in (
        "assert_tool_call: search_flights where destination equals NBO",
        "assert_tool_call: create_booking where flight.id equals KQ311 and passenger.name is Casey",
        "assert: reply contains booked",
        "assert: reply contains B-1042",
    )
)
"""The facts the dialect reads (calls, arguments, reply text) at record and at replay."""
PYTHON = "python"
NPM = "npm"
NODE_AGENT = ROOT / "tests" / "agents" / "node" / "gemini_agent.mjs"
NEEDS_NPM = pytest.mark.skipif(
    shutil.which("node") is None
    or not (NODE_AGENT.parent / "node_modules" / "@google" / "genai").is_dir(),
    reason="needs node 20+ and @google/genai: run `make install` (npm ci in tests/agents/node)",
)


def write_spec(directory: Path, client: str, agent_env: dict[str, str] | None = None) -> Path:
    command = agent_command("gemini_agent.py") if client == PYTHON else f"node {NODE_AGENT}"
    return booking.write_spec(
        directory,
        agent_env=agent_env,
        command=command,
        title="Gemini booking assistant books a flight",
        extra_steps=CHECKS,
    )


def streaming(on: bool) -> dict[str, str]:
    return {"AGENT_STREAM": "1"} if on else {}


def record_booking(
    directory: Path, upstream: ScriptedUpstream, client: str = PYTHON, **agent_env: str
) -> CliResult:
    upstream.script = BOOKING_SCRIPT
    write_spec(directory, client, agent_env)
    return record(directory, upstream)


def trace_of(directory: Path) -> dict:
    return json.loads((directory / "specs" / "booking.trace.json").read_text())


@pytest.mark.parametrize(
    ("record_stream", "replay_stream"),
    [(False, False), (True, True), (False, True), (True, False)],
    ids=["json", "stream", "json-then-stream", "stream-then-json"],
)
def test_google_genai_records_then_replays_with_the_upstream_stopped(
    tmp_path: Path, upstream: ScriptedUpstream, record_stream: bool, replay_stream: bool
) -> None:
    """Streaming is in the path (`:streamGenerateContent?alt=sse`), never in what is stored:
    a trace recorded either way replays either way."""
    paths = tmp_path / "paths.txt"
    result = record_booking(
        tmp_path, upstream, AGENT_PATHS_FILE=str(paths), **streaming(record_stream)
    )
    assert result.code == 0, result.output
    assert "3 turns recorded" in result.stderr
    method = "streamGenerateContent?alt=sse" if record_stream else "generateContent"
    assert paths_sent(paths) == [f"/v1/models/gemini-2.5-flash:{method}"] * 3
    # Record asks the upstream for one whole answer, with the model in the path only.
    assert [r.path for r in upstream.received] == [
        "/v1/models/gemini-2.5-flash:generateContent"
    ] * 3
    assert {r.query for r in upstream.received} == {""}
    assert all("model" not in r.body for r in upstream.received)
    upstream.stop()
    turns = trace_of(tmp_path)["lanes"]["model"]
    assert [turn["dialect"] for turn in turns] == ["gemini"] * 3
    assert [next(iter(turn["request"])) for turn in turns] == ["model"] * 3
    assert {turn["request"]["model"] for turn in turns} == {"gemini-2.5-flash"}
    # The mocked search result, as an object, is what the model was shown.
    assert turns[1]["request"]["contents"][-1] == {
        "parts": [
            {
                "functionResponse": {
                    "name": "search_flights",
                    "response": {"flights": [{"id": "KQ311", "dest": "NBO"}]},
                }
            }
        ],
        "role": "user",
    }
    paths.unlink()
    write_spec(tmp_path, PYTHON, {"AGENT_PATHS_FILE": str(paths), **streaming(replay_stream)})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "PASS  Gemini booking assistant books a flight" in result.stderr
    assert "3 of 3 turns served" in result.stderr
    method = "streamGenerateContent?alt=sse" if replay_stream else "generateContent"
    assert paths_sent(paths) == [f"/v1/models/gemini-2.5-flash:{method}"] * 3


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_google_genai_changed_argument_is_a_field_level_divergence(
    tmp_path: Path, upstream: ScriptedUpstream, stream: bool
) -> None:
    assert record_booking(tmp_path, upstream, **streaming(stream)).code == 0
    upstream.stop()
    write_spec(tmp_path, PYTHON, {"AGENT_BUG": "rewrite-flight-id", **streaming(stream)})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "request 3 matches no recorded turn (compared with recorded turn 3)" in result.stderr
    assert (
        'contents[3].parts[0].functionCall.args.flight.id: recorded "KQ311", replayed "KQ999"'
        in result.stderr
    )


def test_a_changed_model_in_the_path_is_a_divergence(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """The model travels in the path; it is matched all the same."""
    assert record_booking(tmp_path, upstream).code == 0
    upstream.stop()
    write_spec(tmp_path, PYTHON, {"AGENT_MODEL": "gemini-2.5-pro"})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert "request 1 matches no recorded turn" in result.stderr
    assert 'model: recorded "gemini-2.5-flash", replayed "gemini-2.5-pro"' in result.stderr


def test_record_sends_the_key_as_x_goog_api_key_and_stores_it_nowhere(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    """With no FLOWPROOF_AGENT_KEY the key comes from GOOGLE_API_KEY, and the upstream from
    GOOGLE_GEMINI_BASE_URL (no version in it, as the SDK has it); the agent holds only the
    placeholder."""
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, PYTHON)
    origin = upstream.base_url.removesuffix("/v1")
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"GOOGLE_GEMINI_BASE_URL": origin, "GOOGLE_API_KEY": KEY, "GEMINI_API_KEY": "unused"},
    )
    assert result.code == 0, result.output
    assert [r.path for r in upstream.received] == [
        "/v1/models/gemini-2.5-flash:generateContent"
    ] * 3
    for received in upstream.received:
        headers = {name.lower(): value for name, value in received.headers.items()}
        assert headers["x-goog-api-key"] == KEY
        assert "authorization" not in headers
    written = (tmp_path / "specs" / "booking.trace.json").read_text()
    assert KEY not in written and "flowproof-placeholder-key" not in written
    assert "x-goog-api-key" not in written.lower()


def test_gemini_api_key_is_the_last_choice(tmp_path: Path, upstream: ScriptedUpstream) -> None:
    upstream.script = BOOKING_SCRIPT
    write_spec(tmp_path, PYTHON)
    result = flowproof(
        "record",
        "specs",
        cwd=tmp_path,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "GEMINI_API_KEY": KEY},
    )
    assert result.code == 0, result.output
    assert {r.headers.get("x-goog-api-key") for r in upstream.received} == {KEY}
    assert KEY not in (tmp_path / "specs" / "booking.trace.json").read_text()


@NEEDS_NPM
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_google_genai_npm_records_replays_and_diverges(
    tmp_path: Path, upstream: ScriptedUpstream, stream: bool
) -> None:
    """Both SDKs call `/v1` by default; GOOGLE_GENAI_API_VERSION=beta makes this one call
    `/v1beta`, which is routed the same and forwarded with the version the agent chose."""
    paths = tmp_path / "paths.txt"
    beta = {"GOOGLE_GENAI_API_VERSION": "beta"}
    result = record_booking(
        tmp_path, upstream, NPM, AGENT_PATHS_FILE=str(paths), **beta, **streaming(stream)
    )
    assert result.code == 0, result.output
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    assert paths_sent(paths) == [f"/v1beta/models/gemini-2.5-flash:{method}"] * 3
    assert [r.path for r in upstream.received] == [
        "/v1beta/models/gemini-2.5-flash:generateContent"
    ] * 3
    upstream.stop()
    assert [t["dialect"] for t in trace_of(tmp_path)["lanes"]["model"]] == ["gemini"] * 3
    write_spec(tmp_path, NPM, {**beta, **streaming(not stream)})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 0, result.output
    assert "3 of 3 turns served" in result.stderr
    write_spec(tmp_path, NPM, {**beta, "AGENT_BUG": "rewrite-flight-id", **streaming(stream)})
    result = flowproof("run", "specs", cwd=tmp_path)
    assert result.code == 1, result.output
    assert (
        'contents[3].parts[0].functionCall.args.flight.id: recorded "KQ311", replayed "KQ999"'
        in result.stderr
    )

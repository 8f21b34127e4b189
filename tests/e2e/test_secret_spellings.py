"""A declared secret is found however the agent's traffic spells it, and never shown, whole or
in part, by any of flowproof's outputs: the real openai-SDK agent sends the value the usual
way (`json.dumps` of a tool result, so it reaches the body escaped), and a long token cut by a
divergence window leaves no piece of itself in the console, the run record or any report."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from tests.conftest import CliResult, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e
SPELLINGS = {
    "JSON in JSON": 'pa"ss\\word-42',  # the body carries pa\\\"ss\\\\\\\\word-42
    "unicode escape": "pässwörd-42",  # json.dumps writes p\\u00e4ssw\\u00f6rd-42
}
STEP = "  - assert_no_secret_leak: DB_PASSWORD\n"
TOKEN = "acme-" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop"
"""56 characters, in no provider's key shape (the record's lint would refuse one)."""
PROMPT = "Book me a flight to Nairobi tomorrow"
PIECE = 12
"""No run of this many characters of the token may reach any output."""


def leaky_spec(directory: Path, *, declared: bool) -> Path:
    return write_spec(
        directory,
        agent_env={"AGENT_BUG": "secret-in-tool-result"},
        extra_steps=STEP if declared else "",
    )


def failing(project: Path, password: str, *command: str) -> CliResult:
    """`flowproof COMMAND` with DB_PASSWORD set, which must find a failure (exit 1)."""
    result = flowproof(*command, cwd=project, env={"DB_PASSWORD": password})
    assert result.code == 1, result.output
    return result


def reports(project: Path) -> dict[str, str]:
    written = flowproof(
        "report", "--html", "r.html", "--markdown", "r.md", "--junit", "r.xml", cwd=project
    )
    assert written.code == 0, written.output
    (run,) = sorted((project / ".flowproof" / "runs").glob("*/report.json"))[-1:]
    return {
        "run record": run.read_text(),
        **{name: (project / name).read_text() for name in ("r.html", "r.md", "r.xml")},
    }


@pytest.mark.parametrize("value", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_a_secret_in_a_json_tool_result_fails_the_record_and_writes_no_trace(
    tmp_path: Path, upstream: ScriptedUpstream, value: str
) -> None:
    upstream.script = BOOKING_SCRIPT
    leaky_spec(tmp_path, declared=True)
    result = record(tmp_path, upstream, DB_PASSWORD=value)
    assert result.code == 1, result.output
    assert (
        "step 2 (booking.yaml:13): assert_no_secret_leak DB_PASSWORD — the value of "
        "DB_PASSWORD appeared in turn 3 request at messages[5].content"
    ) in result.stderr
    assert not (tmp_path / "specs" / "booking.trace.json").exists()
    assert_never_shown(value, {"console": result.output, **reports(tmp_path)})


@pytest.mark.parametrize("value", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_a_trace_holding_an_escaped_secret_fails_lint_and_replay(
    tmp_path: Path, upstream: ScriptedUpstream, value: str
) -> None:
    """A trace recorded before the secret was declared: the lint gate and the replay's own
    scan find the escaped spelling once the spec declares it."""
    upstream.script = BOOKING_SCRIPT
    leaky_spec(tmp_path, declared=False)
    assert record(tmp_path, upstream, DB_PASSWORD=value).code == 0
    upstream.stop()
    trace = json.loads((tmp_path / "specs" / "booking.trace.json").read_text())
    result = trace["lanes"]["model"][2]["request"]["messages"][5]["content"]
    assert value not in result and json.dumps(value)[1:-1] in result  # escaped, as sent
    leaky_spec(tmp_path, declared=True)
    linted = failing(tmp_path, value, "trace", "lint")
    assert (
        "specs/booking.trace.json: lanes.model[2].request.messages[5].content: "
        "the value of DB_PASSWORD"
    ) in linted.stderr
    replayed = failing(tmp_path, value, "run", "specs")
    assert (
        "assert_no_secret_leak DB_PASSWORD — the value of DB_PASSWORD appeared in turn 3 "
        "request at messages[5].content"
    ) in replayed.stderr
    shown = reports(tmp_path)
    assert_never_shown(value, {"console": replayed.output + linted.output, **shown})
    page = html.unescape(shown["r.html"])
    assert "[redacted DB_PASSWORD]" in page  # the tool result is shown, with the marker


def test_lint_flags_an_escaped_secret_added_to_a_trace_by_hand(recorded: Path) -> None:
    value = SPELLINGS["JSON in JSON"]
    path = recorded / "specs" / "booking.trace.json"
    document = json.loads(path.read_text())
    message = document["lanes"]["model"][0]["request"]["messages"][1]
    message["content"] += " " + json.dumps({"password": value})
    path.write_text(json.dumps(document, indent=2))
    write_spec(recorded, extra_steps=STEP)
    assert flowproof("trace", "lint", cwd=recorded, env={"DB_PASSWORD": "other"}).code == 0
    linted = failing(recorded, value, "trace", "lint")
    assert (
        "specs/booking.trace.json: lanes.model[0].request.messages[1].content: "
        "the value of DB_PASSWORD"
    ) in linted.stderr


def test_a_token_cut_by_a_divergence_window_leaves_no_piece_in_any_output(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    spec = write_spec(tmp_path)
    original = spec.read_text()

    def asking(destination: str) -> str:
        prompt = f"Use token {TOKEN} to book. Go to {destination}. The token again is {TOKEN} ok"
        return original.replace(PROMPT, prompt)

    spec.write_text(asking("Nairobi"))
    assert record(tmp_path, upstream).code == 0  # the token is not declared yet
    upstream.stop()
    # The first difference sits between the two copies: the window cuts both of them.
    spec.write_text(asking("Mombasa") + "  - assert_no_secret_leak: GH_TOKEN\n")
    result = flowproof("run", "specs", cwd=tmp_path, env={"GH_TOKEN": TOKEN})
    assert result.code == 1, result.output
    assert "texts differ from character" in result.stderr  # the window is shown...
    channels = {"console": result.output, **reports(tmp_path)}
    assert_no_piece(TOKEN, channels)
    for name in ("console", "run record"):  # ...with the cut pieces masked
        assert "[redacted GH_TOKEN]" in channels[name], name


def assert_never_shown(value: str, channels: dict[str, str]) -> None:
    for name, text in channels.items():
        for shown in (text, html.unescape(text)):
            for spelling in escaped(value):
                assert spelling not in shown, f"the value reached the {name} as {spelling!r}"
            for depth_text in decoded_strings(shown):
                assert value not in depth_text, f"the value, decoded, is in the {name}"


def escaped(value: str) -> set[str]:
    """The value and its JSON-escaped spellings, three levels deep, with and without
    `ensure_ascii`, written out independently of flowproof's own list."""
    found, level = {value}, {value}
    for _ in range(3):
        level = {json.dumps(v, ensure_ascii=a)[1:-1] for v in level for a in (False, True)}
        found |= level
    return found


def decoded_strings(text: str) -> list[str]:
    """Every string a reader (or a report) gets by decoding JSON in `text`, at any depth."""
    found, todo = [], [text]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            parsed = json.loads(current)
        except ValueError:
            continue
        todo.extend(strings_in(parsed))
    return found


def strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def assert_no_piece(token: str, channels: dict[str, str]) -> None:
    pieces = {token[i : i + PIECE] for i in range(len(token) - PIECE + 1)}
    for name, text in channels.items():
        shown = html.unescape(text)
        leaked = sorted(piece for piece in pieces if piece in shown)
        assert not leaked, f"the {name} shows part of the token: {leaked[0]!r}"

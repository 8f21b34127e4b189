"""Gemini generateContent: routing from the path, facts, name-and-order result matching,
object-valued substitution, auth and the synthesized `alt=sse` stream."""

from __future__ import annotations

import json

import pytest

from flowproof.core.mocks import ToolMock
from flowproof.dialects import dialect_for_path, dialect_named
from flowproof.dialects.base import Envelope, Route
from flowproof.proxy.forward import Upstream

GEMINI = dialect_named("gemini")
assert GEMINI is not None


def call(name: str, args: dict | None = None) -> dict:
    return {"functionCall": {"name": name, "args": args or {}}}


def answer(name: str, response: object) -> dict:
    return {"functionResponse": {"name": name, "response": response}}


def conversation() -> dict:
    """search twice (the second time alongside book), each answered in order."""
    return {
        "model": "gemini-2.5-flash",
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [call("search", {"q": 1})]},
            {"role": "user", "parts": [answer("search", {"real": 0})]},
            {"role": "model", "parts": [call("book"), call("search", {"q": 2})]},
            {"role": "user", "parts": [answer("search", {"real": 1}), answer("book", {"ok": 1})]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief. "}, {"text": "Use tools."}]},
        "tools": [{"functionDeclarations": [{"name": "search"}, {"name": "book"}]}],
    }


@pytest.mark.parametrize(
    "path",
    [
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        "/v1/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1beta/models/gemini-2.5-flash:generateContent/",
    ],
)
def test_generate_content_paths_are_gemini(path: str) -> None:
    assert dialect_for_path(path) is GEMINI


@pytest.mark.parametrize(
    "path",
    [
        "/v1beta/models/gemini-2.5-flash:countTokens",
        "/v1beta/models/gemini-2.5-flash",
        "/v1beta/models/gemini-2.5-flash:generateContent/extra",
        "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:generateContent",
    ],
)
def test_other_model_methods_are_not_served(path: str) -> None:
    assert dialect_for_path(path) is None


def test_the_path_names_the_model_the_stream_and_the_upstream_path() -> None:
    route = GEMINI.route("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=sse&x=1")
    assert route == Route(
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "x=1",
        stream=True,
        path_fields=(("model", "gemini-2.5-flash"),),
    )
    plain = GEMINI.route("/v1/models/gemini-2.5-pro:generateContent", "key=placeholder")
    assert (plain.upstream_path, plain.query, plain.stream) == (
        "/v1/models/gemini-2.5-pro:generateContent",
        "",
        False,
    )


def test_the_model_leads_the_stored_body_and_leaves_the_forwarded_one() -> None:
    route = GEMINI.route("/v1/models/m-1:generateContent", "")
    adopted = route.adopt({"contents": [], "model": "stale"})
    assert list(adopted) == ["model", "contents"] and adopted["model"] == "m-1"
    assert route.outbound(adopted) == {"contents": []}


def test_facts_of_a_response() -> None:
    parts = [{"text": "Searching."}, call("search", {"q": "NBO", "n": [1]})]
    response = {"candidates": [{"content": {"role": "model", "parts": parts}}]}
    assert GEMINI.tool_calls(response) == [("search", '{"q": "NBO", "n": [1]}')]
    assert GEMINI.reply_text(response) is None
    thought = {"text": "thinking...", "thought": True}
    text = {"candidates": [{"content": {"parts": [thought, {"text": "Booked."}]}}]}
    assert GEMINI.tool_calls(text) == [] and GEMINI.reply_text(text) == "Booked."


def test_system_instruction_is_the_system_prompt() -> None:
    assert GEMINI.system_prompt(conversation()) == "Be brief. Use tools."
    assert GEMINI.system_prompt({"systemInstruction": "plain"}) == "plain"
    assert GEMINI.system_prompt({"contents": []}) == ""


def test_the_envelope_names_model_tools_and_part_kinds() -> None:
    assert GEMINI.envelope(conversation()) == Envelope(
        model="gemini-2.5-flash",
        tools=("search", "book"),
        roles=(
            "user",
            "model(functionCall)",
            "user(functionResponse)",
            "model(functionCall)",
            "user(functionResponse)",
        ),
    )


def test_results_answer_the_call_of_the_same_name_in_order() -> None:
    """The k-th result named `search` answers the k-th call named `search`, wherever book's
    result sits between them."""
    mocks = {"search": ToolMock(("first", {"hits": 2}), repeat=False)}
    out = GEMINI.substitute_tool_results(conversation(), mocks)
    responses = [
        p["functionResponse"]
        for c in out["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]
    assert [(r["name"], r["response"]) for r in responses] == [
        ("search", {"output": "first"}),
        ("search", {"hits": 2}),
        ("book", {"ok": 1}),
    ]
    assert GEMINI.latest_tool_results(out) == [("search", '{"hits": 2}'), ("book", '{"ok": 1}')]


def test_a_mocked_result_is_written_as_an_object() -> None:
    """Gemini takes `response` as a JSON object: a mock that is one is written as it is, any
    other value under Gemini's own `output` key."""
    for mocked, written in (
        ({"a": 1}, {"a": 1}),
        ([1, 2], {"output": [1, 2]}),
        ("ok", {"output": "ok"}),
    ):
        out = GEMINI.substitute_tool_results(conversation(), {"book": ToolMock((mocked,), True)})
        assert out["contents"][4]["parts"][1]["functionResponse"]["response"] == written


def test_the_key_travels_in_x_goog_api_key() -> None:
    assert GEMINI.auth_headers("k-1") == {"x-goog-api-key": "k-1"}
    assert GEMINI.auth_headers("Bearer k-1") == {"x-goog-api-key": "k-1"}


def test_the_stream_is_one_complete_response_per_frame_with_no_done() -> None:
    response = GEMINI.text_response({"model": "m"}, "hi")
    frames = GEMINI.render_stream({}, response)
    assert len(frames) == 1
    assert frames[0].startswith(b"data: ") and frames[0].endswith(b"\n\n")
    assert json.loads(frames[0][len(b"data: ") :]) == response
    assert b"[DONE]" not in b"".join(frames)


def test_record_forwards_to_the_origin_of_the_override_or_the_gemini_base() -> None:
    route = GEMINI.route("/v1beta/models/m:generateContent", "")
    override = Upstream("http://127.0.0.1:9/v1", {}, None)
    assert override.url_for(GEMINI, route) == "http://127.0.0.1:9/v1beta/models/m:generateContent"
    based = Upstream.from_environ({"GOOGLE_GEMINI_BASE_URL": "http://g.example/"})
    assert based.url_for(GEMINI, route) == "http://g.example/v1beta/models/m:generateContent"
    default = Upstream.from_environ({})
    assert default.url_for(GEMINI, route) == (
        "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent"
    )


@pytest.mark.parametrize(
    ("environ", "key"),
    [
        ({"FLOWPROOF_AGENT_KEY": "a", "GOOGLE_API_KEY": "b", "GEMINI_API_KEY": "c"}, "a"),
        ({"GOOGLE_API_KEY": "b", "GEMINI_API_KEY": "c"}, "b"),
        ({"GEMINI_API_KEY": "c", "OPENAI_API_KEY": "d"}, "c"),
        ({"OPENAI_API_KEY": "d"}, None),
    ],
)
def test_the_key_comes_from_flowproof_then_google_then_gemini(
    environ: dict[str, str], key: str | None
) -> None:
    upstream = Upstream.from_environ(environ)
    assert upstream.key_for(GEMINI) == key
    headers = upstream.headers_for(GEMINI, {"x-goog-api-key": "placeholder"})
    assert headers.get("x-goog-api-key") == key

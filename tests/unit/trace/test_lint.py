"""The trace lint rules: each finds its shape, names the place, never the value."""

from __future__ import annotations

import json
import re

import pytest

from flowproof.mcp.lane import Call
from flowproof.trace.lint import REMOVE_OR_ALLOW, Allowed, HomeFacts, Rules, lint_lanes
from flowproof.trace.model import Lane, Turn

SHAPES = {
    "an OpenAI API key": "sk-proj-" + "a1B2c3D4" * 4,
    "an Anthropic API key": "sk-ant-api03-" + "Zy9" * 10,
    "a Google API key": "AIza" + "B" * 35,
    "an AWS access key id": "AKIA" + "ABCDEFGHIJKLMNOP",
    "a GitHub token": "ghp_" + "x" * 36,
    "a Slack token": "xoxb-1234567890-abcdef",
    "a Stripe key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "a JWT": "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f",
    "a PEM private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
    "an absolute home-directory path": "see /home/casey/project/notes.txt",
}


def model_lane(content: str) -> Lane:
    request = {"messages": [{"role": "user", "content": f"please use {content} now"}]}
    return Lane("model", (Turn("openai_chat", request, {"choices": []}),))


@pytest.mark.parametrize(("rule", "value"), SHAPES.items())
def test_each_shape_is_found_at_its_path_and_its_value_never_shown(rule: str, value: str) -> None:
    findings = lint_lanes("t.trace.json", [model_lane(value)], Rules())
    assert [f.render() for f in findings] == [
        f"t.trace.json: lanes.model[0].request.messages[0].content: {rule}"
    ]
    assert value not in findings[0].render()


def test_ordinary_traffic_is_clean() -> None:
    clean = "Book flight KQ311 (call_search_flights, chatcmpl-9x8y7z, resp_0123456789abcdef)"
    assert (
        lint_lanes("t", [model_lane(clean), model_lane("flowproof-placeholder-key")], Rules()) == []
    )


def test_a_header_like_key_in_a_body_is_found() -> None:
    request = {"metadata": {"Authorization": "Bearer abc"}, "cookie": ""}
    lane = Lane("model", (Turn("openai_chat", request, {}),))
    (finding,) = lint_lanes("t", [lane], Rules())
    assert finding.rule == "a header-like key 'Authorization' holding a value"
    assert finding.path == "lanes.model[0].request.metadata.Authorization"


def test_mcp_lanes_are_scanned_by_their_file_field_names() -> None:
    call = Call(
        {"method": "tools/call", "params": {"name": "x"}}, {"result": {"t": "AKIAABCDEFGHIJKLMNOP"}}
    )
    (finding,) = lint_lanes("t", [Lane("mcp.fs", (call,))], Rules())
    assert finding.path == "lanes.mcp.fs[0].answer.result.t"


def test_declared_secrets_and_extra_patterns_are_found_and_allow_entries_accept_one() -> None:
    lane = model_lane("ticket TKT-99812 for hunter2-long-password")
    rules = Rules(
        patterns=(("an internal ticket id", re.compile(r"TKT-\d{5}")),),
        secrets={"DB_PASSWORD": "hunter2-long-password"},
    )
    found = {f.rule for f in lint_lanes("specs/a.trace.json", [lane], rules)}
    assert found == {"an internal ticket id", "the value of DB_PASSWORD"}
    path = "lanes.model[0].request.messages[0].content"
    allowed = Rules(
        rules.patterns, rules.secrets, (Allowed("a.trace.json", path, "an internal ticket id"),)
    )
    assert {f.rule for f in lint_lanes("specs/a.trace.json", [lane], allowed)} == {
        "the value of DB_PASSWORD"
    }


NEAR_MISSES = {
    "an OpenAI API key": "sk-short-1234",  # too short to be a key
    "an Anthropic API key": "sk-ant-abc",
    "a Google API key": "AIza" + "B" * 20,
    "an AWS access key id": "AKIA" + "abcdefghijklmnop",  # lower case is no key id
    "a GitHub token": "ghp_" + "x" * 10,
    "a Slack token": "xoxb-123",
    "a Stripe key": "sk_demo_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "a JWT": "eyJhbGciOiJIUzI1.not-a-token",
    "a PEM private key": "-----BEGIN PUBLIC KEY-----",
    "an absolute home-directory path": "see /home without a user, or /usr/share/doc/",
}


@pytest.mark.parametrize(("rule", "value"), NEAR_MISSES.items())
def test_each_shape_has_a_near_miss_that_is_clean(rule: str, value: str) -> None:
    assert SHAPES[rule] != value
    assert lint_lanes("t", [model_lane(value)], Rules()) == []


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_a_declared_secret_is_found_json_escaped_inside_a_string(ensure_ascii: bool) -> None:
    value = 'pa"ss\\wörd'
    lane = model_lane(json.dumps({"password": value}, ensure_ascii=ensure_ascii))
    (finding,) = lint_lanes("t", [lane], Rules(secrets={"DB_PASSWORD": value}))
    assert finding.render() == (
        "t: lanes.model[0].request.messages[0].content: the value of DB_PASSWORD"
    )


HOME_PATH_TEXT = "see /home/casey/project/notes.txt"


def home_remedy(home: HomeFacts) -> str:
    (finding,) = lint_lanes("t.trace.json", [model_lane(HOME_PATH_TEXT)], Rules(home=home))
    assert finding.rule == "an absolute home-directory path"  # what allow: entries name
    return finding.remedy


def test_a_home_path_that_slipped_past_the_default_is_a_bug_to_report() -> None:
    remedy = home_remedy(HomeFacts(("/home/casey",), normalized=True))
    assert remedy.startswith(
        "flowproof normalises the home directory by default, yet this spelling of it slipped "
        "through ('/home/casey/'); that is a flowproof bug, please report it"
    )
    assert "remove it from what the agent sends" not in remedy


def test_a_home_path_under_an_opt_out_names_the_entry_to_drop() -> None:
    home = HomeFacts(("/home/casey",), normalized=False, opt_out="specs/x.yaml:6: no-home")
    assert home_remedy(home) == (
        "the flow opts out of normalising the home directory (specs/x.yaml:6: no-home); drop "
        "that entry so the home directory is recorded as {{flowproof.home}}"
    )


def test_another_users_home_is_left_to_the_agents_author() -> None:
    remedy = home_remedy(HomeFacts(("/home/robin",), normalized=True))
    assert remedy == REMOVE_OR_ALLOW
    assert remedy.startswith("remove it from what the agent sends or receives")


@pytest.mark.parametrize(
    "text",
    [
        "The absolute path to the file to read (e.g., '/home/user/project/file.txt').",
        'mkdir "/Users/name/My Documents"',
        r"C:\\Users\\username\\project",
    ],
)
def test_a_documentation_example_path_names_nobody(text: str) -> None:
    assert lint_lanes("t", [model_lane(text)], Rules()) == []


def test_an_example_name_that_is_the_recorders_own_home_is_still_found() -> None:
    home = HomeFacts(("/home/user",), normalized=False, opt_out="specs/x.yaml:6: no-home")
    lane = model_lane("see /home/user/project/notes.txt")
    (finding,) = lint_lanes("t", [lane], Rules(home=home))
    assert finding.rule == "an absolute home-directory path"


def test_a_real_home_after_an_example_one_is_found() -> None:
    lane = model_lane("e.g. /home/user/x.txt, here /home/casey/notes.txt")
    (finding,) = lint_lanes("t", [lane], Rules())
    assert finding.rule == "an absolute home-directory path"

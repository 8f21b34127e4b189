"""The redactor on the output path: names the variable, never shows the value, in any form."""

from __future__ import annotations

import json

import pytest

from flowproof.guards.redaction import Redactor, record_keys


def test_a_value_is_replaced_by_its_variable_name_raw_and_json_escaped() -> None:
    redact = Redactor({"DB_PASSWORD": 'pa"ss\\word'})
    redact.hide_record_keys({"OPENAI_API_KEY": "sk-live-1", "UNRELATED": "x"})
    text = f"key sk-live-1, password {json.dumps({'p': 'pa' + chr(34) + 'ss' + chr(92) + 'word'})}"
    assert redact(text) == (
        'key [redacted OPENAI_API_KEY], password {"p": "[redacted DB_PASSWORD]"}'
    )
    assert redact('raw pa"ss\\word') == "raw [redacted DB_PASSWORD]"


def test_a_value_containing_another_is_replaced_whole() -> None:
    redact = Redactor({"SHORT": "abc", "LONG": "abcdef"})
    assert redact("abcdef abc") == "[redacted LONG] [redacted SHORT]"


def test_empty_values_are_ignored_and_the_repr_shows_names_only() -> None:
    redact = Redactor({"EMPTY": "", "KEY": "sk-9"})
    assert redact("sk-9") == "[redacted KEY]" and "sk-9" not in repr(redact)
    assert record_keys({"FLOWPROOF_AGENT_KEY": "", "ANTHROPIC_API_KEY": "a"}) == {
        "ANTHROPIC_API_KEY": "a"
    }


def test_every_occurrence_is_replaced() -> None:
    assert Redactor({"DB": "pw-1"})("a pw-1 b pw-1") == "a [redacted DB] b [redacted DB]"


def test_a_value_json_escaped_twice_or_as_unicode_escapes_is_replaced() -> None:
    """A tool result is `json.dumps(...)` inside a request body: the value is escaped twice,
    and once more in a document that stores the body."""
    value = 'pa"ss\\wörd'
    redact = Redactor({"DB_PASSWORD": value})
    for ensure_ascii in (False, True):
        body = json.dumps({"content": json.dumps({"password": value}, ensure_ascii=ensure_ascii)})
        stored = json.dumps({"body": body}, ensure_ascii=ensure_ascii)
        assert redact(stored).count("[redacted DB_PASSWORD]") == 1
        inner = json.loads(json.loads(json.loads(redact(stored))["body"])["content"])
        assert inner == {"password": "[redacted DB_PASSWORD]"}


def test_a_piece_of_a_value_left_at_a_cut_is_replaced() -> None:
    token = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop"
    window = f'texts differ: recorded …"token {token[:32]}"…, replayed …"{token[30:]} ok"'
    assert Redactor({"GH_TOKEN": token})(window) == (
        'texts differ: recorded …"token [redacted GH_TOKEN]"…, replayed …"[redacted GH_TOKEN] ok"'
    )


@pytest.mark.parametrize(
    "variable", ["https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
)
def test_a_proxy_credential_is_hidden_like_a_key(variable: str) -> None:
    redactor = Redactor()
    redactor.hide_record_keys({variable: "http://corp:pa%2Fss-w0rd-77@proxy.test:3128"})
    shown = redactor("agent said: http://corp:pa%2Fss-w0rd-77@proxy.test:3128 and pa/ss-w0rd-77")
    assert "w0rd" not in shown, shown
    assert f"[redacted {variable}]" in shown


def test_a_token_as_the_proxy_user_is_hidden() -> None:
    redactor = Redactor()
    redactor.hide_record_keys({"HTTPS_PROXY": "tok-9f8e7d6c5b4a@proxy.test:3128"})
    assert "tok-9f8e7d6c5b4a" not in redactor("via http://tok-9f8e7d6c5b4a@proxy.test:3128")


def test_a_redactor_holding_many_values_compiles_each_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's redactor gains a value with every flow (its capability): past the size
    of a shared cache, every line printed would compile every value again."""
    import flowproof.guards.redaction as redaction

    compiled: list[str] = []
    real = redaction.spelling_pattern

    def counted(value: str) -> object:
        compiled.append(value)
        return real(value)

    monkeypatch.setattr(redaction, "spelling_pattern", counted)
    values = {f"FLOW_{number}": f"capability-{number:04d}-token" for number in range(300)}
    redact = Redactor(values)
    assert redact("flow 7 printed capability-0007-token") == "flow 7 printed [redacted FLOW_7]"
    assert redact("flow 299 printed capability-0299-token") == (
        "flow 299 printed [redacted FLOW_299]"
    )
    assert sorted(compiled) == sorted(values.values())

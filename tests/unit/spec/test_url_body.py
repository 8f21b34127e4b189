"""`agent.body`: the JSON a `url:` service is POSTed for each turn, and the spec errors that
name its line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flowproof.core.errors import SpecError
from flowproof.drivers.url import turn_body
from flowproof.spec.load import load_spec


def test_a_template_is_filled_keeping_whole_placeholders_typed() -> None:
    template = {
        "input": {"messages": [{"role": "user", "content": "{{prompt}}"}]},
        "session": "{{ conversation_id }}",
        "turn": "{{turn}}",
        "label": "turn {{turn}} of {{conversation_id}}",
        "stream": False,
    }
    sent = turn_body(template, "Yes, book it", "c0ffee", 2)
    assert sent == {
        "input": {"messages": [{"role": "user", "content": "Yes, book it"}]},
        "session": "c0ffee",
        "turn": 2,
        "label": "turn 2 of c0ffee",
        "stream": False,
    }


def test_without_a_template_a_turn_is_sent_in_the_conversation_shape() -> None:
    assert turn_body(None, "hi", "c0ffee", 1) == {
        "prompt": "hi",
        "conversation_id": "c0ffee",
        "turn": 1,
    }


def test_a_prompt_holding_braces_is_sent_as_written() -> None:
    assert turn_body({"q": "{{prompt}}!"}, "say {{turn}}", "c", 3) == {"q": "say {{turn}}!"}


def write(tmp_path: Path, agent: str) -> Path:
    spec = tmp_path / "chat.yaml"
    spec.write_text(
        "name: Chat\napp: agent\nagent:\n"
        + textwrap.indent(textwrap.dedent(agent), "  ")
        + "steps:\n  - prompt: hello\n"
    )
    return spec


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        (
            """\
            url: http://127.0.0.1:8088/chat
            proxy_port: 4646
            body: {message: "{{prompt}}", user: "{{user}}"}
            """,
            "'body' holds {{user}}, which flowproof does not fill; it fills {{prompt}}, "
            "{{conversation_id}}, {{turn}}",
        ),
        (
            """\
            url: http://127.0.0.1:8088/chat
            proxy_port: 4646
            body: {message: hello}
            """,
            "'body' has no {{prompt}}",
        ),
        (
            """\
            command: python agent.py
            body: {message: "{{prompt}}"}
            """,
            "'body' is what a 'url' service is POSTed",
        ),
    ],
)
def test_a_bad_body_is_a_spec_error_at_the_agent(tmp_path: Path, agent: str, message: str) -> None:
    spec = write(tmp_path, agent)
    with pytest.raises(SpecError) as raised:
        load_spec(spec)
    assert message in str(raised.value)
    assert raised.value.line == 4 + agent.count("\n") - 1  # the `body:` line, the last

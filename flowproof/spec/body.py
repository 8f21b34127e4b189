"""What a `url:` service is POSTed for each turn: the spec's `agent.body`, a JSON template whose
`{{prompt}}`, `{{conversation_id}}` and `{{turn}}` are filled in. Pure: the spec model checks a
template with it, the url driver fills one.

A string that is one placeholder and nothing else becomes the value itself (`"{{turn}}"` the
number 2, not the text "2"); a placeholder inside a longer string is replaced by its text.
Object keys are sent as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
FILLED = ("prompt", "conversation_id", "turn")
"""The placeholders flowproof fills: the turn's text, the id it mints for each run of a flow
(the same in every turn), and the turn's number counted from 1."""

CONVERSATION: Mapping[str, Any] = {
    "prompt": "{{prompt}}",
    "conversation_id": "{{conversation_id}}",
    "turn": "{{turn}}",
}
"""What each turn of a `conversation:` POSTs without `agent.body`."""


def placeholders(template: Any) -> set[str]:
    """Every placeholder name in the template's string values."""
    if isinstance(template, str):
        return {match[1] for match in PLACEHOLDER.finditer(template)}
    if isinstance(template, Mapping):
        return set().union(*(placeholders(value) for value in template.values()))
    if isinstance(template, list):
        return set().union(*(placeholders(item) for item in template))
    return set()


def filled(template: Any, values: Mapping[str, str | int]) -> Any:
    """The template with its placeholders replaced from `values` (every name in it must be
    one of `FILLED`, which the spec model checks when it loads)."""
    if isinstance(template, str):
        whole = PLACEHOLDER.fullmatch(template)
        if whole is not None:
            return values[whole[1]]
        return PLACEHOLDER.sub(lambda match: str(values[match[1]]), template)
    if isinstance(template, Mapping):
        return {key: filled(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [filled(item, values) for item in template]
    return template

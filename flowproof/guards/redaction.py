"""The one redactor on flowproof's output path.

Every string flowproof shows or leaves behind — the console, GitHub annotations and the job
summary, the run record, and every report rendered from it, a saved traceback — passes through
one `Redactor` that knows every value flowproof must never show: the record key variables
(read from flowproof's own environment at start), and the declared secrets of each flow
(`assert_no_secret_leak`) as the flows run; the MCP boundary adds its Authorization values the
same way. A value is replaced by `[redacted NAME]`, naming the variable and never the value,
in every spelling guards/spellings.py knows, and so is a piece of one that a shortened text
(a divergence window, a stderr tail) left at its cut.

An agent can echo anything into its stderr, a reply or an argument, so the redactor does not
trust where a string came from: it is applied at the last moment, to the text as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from flowproof.guards.spellings import hide, spelling_pattern
from flowproof.host.proxy_environ import PROXY_VARIABLES

SHARED_KEY_VARIABLES = ("FLOWPROOF_AGENT_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
"""Where `record` reads the upstream key of the OpenAI and Anthropic APIs (first set wins)."""
RECORD_KEY_VARIABLES = (
    *SHARED_KEY_VARIABLES,
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "OLLAMA_API_KEY",
)
"""Every variable `record` may read an upstream key from (each dialect's `key_variables`, in
its own order): never stored, never shown."""


class Redactor:
    """Values to hide, by the name of the variable that held them."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._names: dict[str, str] = {}
        self._patterns: dict[str, re.Pattern[str]] = {}
        """Each value's expression, compiled once: the process's redactor gains a value with
        every flow (its capability), and a bounded cache shared by all of them would, past
        its size, compile every one of them again for every line printed."""
        self.hide_all(values or {})

    def hide(self, name: str, value: str) -> None:
        if value:
            self._names[value] = name

    def hide_all(self, values: Mapping[str, str]) -> None:
        for name, value in values.items():
            self.hide(name, value)

    def hide_record_keys(self, environ: Mapping[str, str]) -> None:
        """The record keys, and the credentials in the proxy variables (which the agent
        inherits, and may print, at record and at replay alike)."""
        self.hide_all(record_keys(environ))
        self.hide_all(proxy_credentials(environ))

    def __call__(self, text: str) -> str:
        # Every spelling (JSON-escaped to any depth, percent-encoded, base64), and every piece
        # of a value that a clip left beside its cut mark: flowproof/guards/spellings.py.
        markers = {value: f"[redacted {name}]" for value, name in self._names.items()}
        return hide(text, markers, self._pattern)

    def _pattern(self, value: str) -> re.Pattern[str]:
        found = self._patterns.get(value)
        if found is None:
            found = self._patterns[value] = spelling_pattern(value)
        return found

    def __repr__(self) -> str:
        return f"Redactor({', '.join(sorted(set(self._names.values())))})"


REDACT = Redactor()
"""The process's redactor, shared by every front door (the CLI's output, the run records, the
pytest items and the in-process fixture): what it hides grows as flows declare secrets."""


def record_keys(environ: Mapping[str, str]) -> dict[str, str]:
    """The record key variables that are set, by name."""
    return {name: environ[name] for name in RECORD_KEY_VARIABLES if environ.get(name)}


def proxy_credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """The credential in each proxy variable that holds one, by name."""
    found = {name: url_credential(environ.get(name, "")) for name in PROXY_VARIABLES}
    return {name: credential for name, credential in found.items() if credential}


def url_credential(url: str) -> str | None:
    """The secret in a URL's user part: the password, or the user name when it stands alone
    (a token passed as the user). A URL without a scheme is read as an http:// one."""
    try:
        parts = urlsplit(url.strip() if "://" in url else f"http://{url.strip()}")
    except ValueError:
        return None
    if parts.password:
        return unquote(parts.password)
    return unquote(parts.username) if parts.username else None

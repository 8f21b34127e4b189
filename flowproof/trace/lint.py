"""What must never be committed in a trace, found by shape: the `flowproof trace lint` gate, and
the same scan `record` runs before it writes.

Pure: a trace's lanes in, findings out. A finding names the trace, the JSON path in it and the
rule; the value it found is never part of it (a lint report pasted into a PR must not leak the
key it caught). Rules:

- provider key shapes (OpenAI, Anthropic, Google, AWS, GitHub, Slack, Stripe), JWTs, PEM
  private keys;
- header-like keys inside a body (`authorization`, `x-api-key`, `api-key`, `cookie`) holding a
  value: a client that pasted its headers into a prompt or a tool result;
- absolute home-directory paths (`/home/<user>/`, `/Users/<user>/`, `C:\\Users\\<user>\\`):
  they name the recorder and break replay elsewhere;
- the values of the variables a spec's `assert_no_secret_leak` declares, when set, in every
  spelling flowproof/guards/spellings.py knows (JSON-escaped to any depth, percent-encoded, base64);
- extra `patterns:` from `flowproof.yaml` (`trace_lint:`), each with a name.

An `allow:` entry in `flowproof.yaml` accepts one known false positive by trace, path and rule,
with a reason a reviewer reads.

Each finding names its remedy. A home-directory path is usually the recorder's own HOME, which
flowproof normalises by default: when one still reaches the trace, either the flow opted out
(`no-home`, and the remedy is to drop that entry) or a spelling slipped past the normalisation,
which is flowproof's bug to report. Only a path nothing in the spec can replace is left to the
agent's author to remove.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowproof.assertions.paths import format_indexed, walk
from flowproof.guards.spellings import appears
from flowproof.trace.model import Lane

KEY_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Stripe key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("a JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")),
)
HEADER_KEYS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "cookie")
HOME_PATH = re.compile(
    r"(?:/home/([^/\s\"']+)/|/Users/([^/\s\"']+)/|[A-Za-z]:\\\\?Users\\\\?([^\\\s\"']+))"
)
EXAMPLE_USERS = frozenset(
    ("user", "username", "name", "you", "yourname", "your-name", "your_name", "me", "example")
)
"""The user names documentation writes in example paths (`/home/user/project/file.txt` in a
coding agent's tool description, `/Users/name/My Documents` in its shell tool's): they name
nobody and are the same at every replay, so they are not findings, unless they are the
recorder's own home."""
PLACEHOLDERS = ("flowproof-placeholder-key",)
"""Values flowproof itself gives agents; never a finding."""
REMOVE_OR_ALLOW = (
    "remove it from what the agent sends or receives, or accept it with a reviewed "
    "`trace_lint: allow:` entry in flowproof.yaml"
)
"""The remedy when nothing in the spec can keep the value out of the trace."""


@dataclass(frozen=True, slots=True)
class Finding:
    trace: str
    """The trace file, as given."""
    path: str
    """Where in the file: `lanes.model[2].request.messages[1].content`."""
    rule: str
    """What was found: `an OpenAI API key`, `a header-like key 'authorization'`."""
    remedy: str = field(default=REMOVE_OR_ALLOW, compare=False)
    """What makes the finding go away, in words a user acts on."""

    def render(self) -> str:
        return f"{self.trace}: {self.path}: {self.rule}"


@dataclass(frozen=True, slots=True)
class Allowed:
    """A reviewed false positive: this rule at this path of this trace is accepted."""

    trace: str
    path: str
    rule: str

    def covers(self, finding: Finding) -> bool:
        return (
            finding.trace.endswith(self.trace)
            and finding.path == self.path
            and finding.rule == self.rule
        )


@dataclass(frozen=True, slots=True)
class HomeFacts:
    """What the flow did with the recorder's home directory, for a home-path finding's remedy."""

    spellings: tuple[str, ...]
    """HOME as the agent has it, in each spelling flowproof knows (as given, resolved)."""
    normalized: bool
    """True when HOME becomes `{{flowproof.home}}` in this flow (by default or declared)."""
    opt_out: str | None = None
    """Where the flow opts out of the default (`specs/x.yaml:6: no-home`), when it does."""

    def remedy(self, found: str) -> str:
        """The remedy for the home-directory path `found` (`/home/ana/`)."""
        if found.rstrip("/\\") not in self.spellings:
            return REMOVE_OR_ALLOW  # another user's home: no fact of this run replaces it
        if self.opt_out is not None:
            return (
                f"the flow opts out of normalising the home directory ({self.opt_out}); "
                "drop that entry so the home directory is recorded as {{flowproof.home}}"
            )
        if self.normalized:
            return (
                "flowproof normalises the home directory by default, yet this spelling of it "
                f"slipped through ({found!r}); that is a flowproof bug, please report it with "
                "this message; until it is fixed, accept the path with a reviewed "
                "`trace_lint: allow:` entry in flowproof.yaml"
            )
        return REMOVE_OR_ALLOW


@dataclass(frozen=True, slots=True)
class Rules:
    patterns: Sequence[tuple[str, re.Pattern[str]]] = ()
    """Extra named patterns (`trace_lint.patterns` in flowproof.yaml)."""
    secrets: Mapping[str, str] = field(default_factory=dict)
    """Declared secret values by variable name (assert_no_secret_leak), when set."""
    allowed: Sequence[Allowed] = ()
    home: HomeFacts | None = None
    """The flow's home directory, when the lint runs for a record (None: `trace lint`)."""


def lint_lanes(trace: str, lanes: Iterable[Lane], rules: Rules) -> list[Finding]:
    findings: list[Finding] = []
    for lane in lanes:
        for number, entry in enumerate(lane.entries):
            for part, body in _parts(entry):
                where = f"lanes.{lane.name}[{number}].{part}"
                findings.extend(_scan(trace, where, body, rules))
    return [f for f in _unique(findings) if not any(a.covers(f) for a in rules.allowed)]


def _parts(entry: Any) -> Iterator[tuple[str, Any]]:
    """The bodies of a lane entry, by the field name the trace file gives them."""
    for name in ("request", "response", "answer", "message"):
        if hasattr(entry, name):
            yield (_FILE_FIELDS.get((type(entry).__name__, name), name), getattr(entry, name))


_FILE_FIELDS = {
    ("Call", "request"): "call",
    ("Notice", "message"): "notification",
    ("ServerRequest", "request"): "server_request",
}
"""An MCP entry's fields are spelled differently in the file (trace/codec.py)."""


def _scan(trace: str, where: str, body: Any, rules: Rules) -> Iterator[Finding]:
    for path, node in walk(body):
        at = _join(where, format_indexed(path))
        if path and isinstance(path[-1], str) and path[-1].lower() in HEADER_KEYS:
            if isinstance(node, str) and node.strip():
                yield Finding(trace, at, f"a header-like key '{path[-1]}' holding a value")
        if not isinstance(node, str) or node in PLACEHOLDERS:
            continue
        for rule, pattern in (*KEY_SHAPES, *rules.patterns):
            if pattern.search(node):
                yield Finding(trace, at, rule)
        if found := _home_path(node, rules.home):
            remedy = rules.home.remedy(found) if rules.home else REMOVE_OR_ALLOW
            yield Finding(trace, at, "an absolute home-directory path", remedy)
        for name, value in rules.secrets.items():
            if appears(value, node):
                yield Finding(trace, at, f"the value of {name}")


def _home_path(text: str, home: HomeFacts | None) -> str | None:
    """The first home-directory path in `text` that names someone (`/home/ana/`), or None."""
    for found in HOME_PATH.finditer(text):
        user = next(group for group in found.groups() if group is not None)
        own = home is not None and found.group(0).rstrip("/\\") in home.spellings
        if own or user.lower() not in EXAMPLE_USERS:
            return found.group(0)
    return None


def _join(where: str, inner: str) -> str:
    if not inner:
        return where
    return f"{where}{inner}" if inner.startswith("[") else f"{where}.{inner}"


def _unique(findings: list[Finding]) -> list[Finding]:
    return list(dict.fromkeys(findings))


def rules_for(settings: Any, secrets: Mapping[str, str], home: HomeFacts | None = None) -> Rules:
    """The rules a suite's `trace_lint:` settings (or None), a flow's secrets and what it did
    with its home directory give."""
    lint = getattr(settings, "trace_lint", None)
    patterns = tuple((p.name, re.compile(p.pattern)) for p in lint.patterns) if lint else ()
    allowed = tuple(Allowed(a.trace, a.path, a.rule) for a in lint.allow) if lint else ()
    return Rules(patterns, dict(secrets), allowed, home)

"""The shape of a spec file, as pydantic models that refuse unknown keys.

Only the shape lives here. Turning YAML into these models, with line numbers and did-you-mean
hints on failure, is `load.py`; steps are parsed there too, because each step is a one-key
mapping whose key decides how its text is read.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from flowproof.matching.fields import checked_field_path
from flowproof.matching.normalize import checked_entry, opted_out
from flowproof.spec.body import FILLED, placeholders

DEFAULT_TIMEOUT_SECONDS = 300.0


def _once_each(entries: list[str]) -> list[str]:
    """A list that names one entry twice was written by mistake (a merge, a copy)."""
    for number, entry in enumerate(entries):
        if entry in entries[:number]:
            raise ValueError(f"'{entry}' is listed twice")
    return entries


def _kept_or_opted_out(entries: list[str]) -> list[str]:
    """`cwd` and `no-cwd` in one list contradict each other."""
    for entry in entries:
        fact = opted_out(entry)
        if fact is not None and fact in entries:
            raise ValueError(f"'{fact}' and '{entry}' contradict each other; keep one")
    return entries


Normalized = Annotated[
    list[Annotated[str, AfterValidator(checked_entry)]],
    AfterValidator(_once_each),
    AfterValidator(_kept_or_opted_out),
]
"""Environment facts (`cwd`, `home`, `tmpdir`, `user`, `hostname`, `date`) or `${VAR}`s, added
to the defaults (`cwd`, `home`, `tmpdir`); `no-cwd`, `no-home`, `no-tmpdir` opt a default out."""
IgnoredFields = Annotated[
    list[Annotated[str, AfterValidator(checked_field_path)]], AfterValidator(_once_each)
]
"""Request-body paths outside the conversation (`metadata.user_id`, `input[*].id`)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _egress_entry(text: str) -> str:
    # Loaded by a spec that declares allow_egress: most flows engage no containment.
    from flowproof.containment.policy import FORMS, EntryError, check_entry

    try:
        check_entry(text)
    except EntryError as exc:
        raise ValueError(f"{exc}; an entry is {FORMS}") from None
    return text


EgressEntry = Annotated[str, AfterValidator(_egress_entry)]


class AgentSpec(_Strict):
    """How to drive the agent under test: a command flowproof starts, or a running service."""

    command: str | None = Field(default=None, min_length=1)
    """Shell command that starts the agent; `${VAR}` and `${flowproof.*}` resolve at spawn."""
    url: str | None = Field(default=None, min_length=1)
    """A running service: flowproof POSTs {"prompt": ...} here to trigger one turn."""
    body: dict[str, Any] | None = None
    """What a `url:` service is POSTed for each turn, as a JSON object: `{{prompt}}`,
    `{{conversation_id}}` and `{{turn}}` are filled in (spec/body.py). Default:
    `{"prompt": "{{prompt}}"}`, and for a conversation also the id and the turn."""
    proxy_port: int | None = Field(default=None, ge=1, le=65535)
    """Fixed local port for the proxy; required with `url:` (the service must point there)."""
    headers: dict[str, str] = {}
    """Headers for the `url:` trigger; `${VAR}` resolves at execution and is never stored."""
    env: dict[str, str] = {}
    """Extra environment for a command agent, applied after everything flowproof injects."""
    timeout: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    """Seconds the agent may run before it is stopped (with its whole process tree)."""
    allow_egress: list[EgressEntry] = []
    """Destinations the agent may reach besides loopback (Linux containment, docs/containment.md):
    `host:port`, `ip:port`, `cidr:port`, `[v6]:port`, or a bare host, ip or cidr (any port);
    `${VAR}` resolves at run and is never stored resolved."""
    cwd: str | None = Field(default=None, min_length=1)
    """The directory a command agent runs in, relative to the spec's directory (`${VAR}`
    resolves); default: the directory flowproof was started in. flowproof writes none of its
    own files inside it unless it is also that directory (engine/workdir.py)."""

    @model_validator(mode="after")
    def _one_driver(self) -> AgentSpec:
        if self.command and self.url:
            raise ValueError("give either 'command' or 'url', not both")
        if not self.command and not self.url:
            raise ValueError(
                "missing 'command' (the shell command that starts your agent) "
                "or 'url' (a running service to POST the prompt to)"
            )
        if self.url and self.proxy_port is None:
            raise ValueError(
                "'url' needs 'proxy_port': the local port the proxy binds, which your service's "
                "model base URL must already point at (http://127.0.0.1:<proxy_port>/v1)"
            )
        if self.url and self.env:
            raise ValueError("'env' applies to a command flowproof starts, not to a 'url' service")
        if self.command and self.headers:
            raise ValueError("'headers' applies to a 'url' trigger, not to a command")
        if self.url and self.cwd:
            raise ValueError("'cwd' applies to a command flowproof starts, not to a 'url' service")
        return self

    @field_validator("body")
    @classmethod
    def _body_for_a_service(
        cls, body: dict[str, Any] | None, info: ValidationInfo
    ) -> dict[str, Any] | None:
        if body is not None:  # (checked here, so that an error names the `body:` line)
            _check_body(body, for_url=bool(info.data.get("url")))
        return body


def _check_body(body: dict[str, Any], for_url: bool) -> None:
    if not for_url:
        raise ValueError(
            "'body' is what a 'url' service is POSTed; a command gets its task in FLOWPROOF_PROMPT"
        )
    found = placeholders(body)
    unknown = sorted(found - set(FILLED))
    if unknown:
        names = ", ".join(f"{{{{{name}}}}}" for name in unknown)
        known = ", ".join(f"{{{{{name}}}}}" for name in FILLED)
        raise ValueError(f"'body' holds {names}, which flowproof does not fill; it fills {known}")
    if "prompt" not in found:
        raise ValueError(
            "'body' has no {{prompt}}: the service would never be told the task; put "
            '"{{prompt}}" where it reads the user\'s message'
        )


class ToolSpec(_Strict):
    """A tool the flow knows about, optionally with the result the model is told it returned."""

    name: str = Field(min_length=1)
    """The tool's name as the model sees it."""
    result: Any = None
    """One fixed result, substituted for every call of this tool before the model sees it."""
    results: list[Any] | None = None
    """Results served in call order: the first call gets the first item."""

    @model_validator(mode="after")
    def _one_kind_of_result(self) -> ToolSpec:
        if "result" in self.model_fields_set and self.results is not None:
            raise ValueError("give either 'result' or 'results', not both")
        return self

    @property
    def is_mocked(self) -> bool:
        """True when the flow substitutes this tool's result (a declaration-only entry is not)."""
        return "result" in self.model_fields_set or self.results is not None


MCP_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class McpToolSpec(ToolSpec):
    """A tool of an MCP server, optionally answered by flowproof instead of the real server."""


class McpServerSpec(_Strict):
    """An MCP server the agent uses, which flowproof stands in for (mcp/)."""

    name: str = Field(min_length=1, pattern=MCP_NAME)
    """The server's name in the flow and its trace lane (`mcp.<name>`)."""
    command: str | None = Field(default=None, min_length=1)
    """A stdio server: the command that starts the REAL server (run only at record)."""
    url: str | None = Field(default=None, min_length=1)
    """A streamable-HTTP server: the REAL server's URL (contacted only at record)."""
    port: int | None = Field(default=None, ge=1, le=65535)
    """A fixed port for flowproof's HTTP listener (default: an ephemeral one)."""
    tools: list[McpToolSpec] = []
    """Tools answered by flowproof with `result:`/`results:`: never forwarded, in either phase."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if self.command and self.url:
            raise ValueError("give either 'command' (a stdio server) or 'url' (an HTTP server)")
        if not self.command and not self.url:
            raise ValueError(
                "missing 'command' (the command that starts a stdio MCP server) or 'url' "
                "(a streamable-HTTP MCP server's URL)"
            )
        if self.command and self.port is not None:
            raise ValueError(
                "'port' applies to a 'url' server (flowproof's HTTP listener); a 'command' "
                "server is spawned by the agent, not dialed"
            )
        return self


class FlowSpec(_Strict):
    """One flow: an agent, the tools it may call, and the steps that drive and judge it."""

    name: str = Field(min_length=1)
    """What the flow checks, in words; shown in every report."""
    app: Literal["agent"]
    """The kind of system under test; `agent` is the only kind flowproof drives."""
    agent: AgentSpec
    tools: list[ToolSpec] = []
    mcp: list[McpServerSpec] = []
    """MCP servers flowproof stands in for: recorded once, replayed with no server."""
    strict: bool = False
    """When true, every tool call must be listed by an assert_tool_call step."""
    normalize: Normalized = []
    """Environment facts whose current value becomes a placeholder in every request body
    before it is matched or stored, and comes back in every response served
    (matching/normalize.py), besides cwd, home and tmpdir, which are by default; `no-cwd`
    opts one of those out. Added to the suite's list."""
    ignore_fields: IgnoredFields = []
    """Request-body paths left out of matching and stored as recorded (matching/fields.py);
    never a path into the conversation. Added to the suite's list."""
    control: str | None = Field(default=None, min_length=1)
    """The id of the control this flow evidences (e.g. `sec.no-transfer-in-readonly`); its
    verdict is recorded in the run record and summarised by `flowproof audit`."""
    steps: list[Any] = Field(min_length=1)
    """Prompt and assertion steps; validated one by one in load.py."""

    @model_validator(mode="after")
    def _unique_mcp_names(self) -> FlowSpec:
        seen: dict[str, str] = {}
        for server in self.mcp:
            variable = mcp_variable_suffix(server.name)
            if variable in seen:
                raise ValueError(
                    f"mcp servers '{seen[variable]}' and '{server.name}' have the same "
                    f"variable name (FLOWPROOF_MCP_*_{variable}); rename one"
                    if seen[variable] != server.name
                    else f"mcp server name '{server.name}' is used twice; names are unique"
                )
            seen[variable] = server.name
        return self


def mcp_variable_suffix(name: str) -> str:
    """`<NAME>` in FLOWPROOF_MCP_SERVER_<NAME>: upper-cased, non-alphanumerics as `_`."""
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()

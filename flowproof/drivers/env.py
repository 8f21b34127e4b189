"""The environment a command agent starts with: inherited, minus flowproof's secrets, plus the
proxy wiring, then `agent.env` LAST so a flow can override anything injected here. The one
exception is NO_PROXY/no_proxy, extended with loopback after `agent.env` too (proxy_environ.py):
a list a flow sets is kept and added to, since no proxy can reach flowproof's loopback."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from flowproof.guards.capability import Capability
from flowproof.host.environ import host_environ
from flowproof.host.proxy_environ import loopback_direct
from flowproof.spec.refs import resolve

PLACEHOLDER_KEY = "flowproof-placeholder-key"
"""Clients refuse to start without a key; the real one never reaches the agent."""

WITH_V1 = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_BASE", "FLOWPROOF_LLM_PROXY")
WITHOUT_V1 = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_BASE",
    "GOOGLE_GEMINI_BASE_URL",
    "AZURE_OPENAI_ENDPOINT",
)
"""Base URLs whose clients add the rest of the path themselves (google-genai `/v1`, the
AzureOpenAI client `/openai/...`)."""
PLACEHOLDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "AZURE_OPENAI_API_KEY")
"""Keys every agent is given as the placeholder, so a client that needs one starts."""
PLACEHOLDER_IF_SET = ("GEMINI_API_KEY", "OLLAMA_API_KEY")
"""Keys replaced by the placeholder only when the user's environment has them: the real key
must not reach the agent, and setting one the user did not would make google-genai and
@google/genai warn that both GOOGLE_API_KEY and GEMINI_API_KEY are set (and a local Ollama
needs no key at all)."""
ORIGIN_ONLY = ("OLLAMA_HOST",)
"""Variables that name the server itself, which the client adds `/api/...` to."""
QUIET = {"OPENAI_AGENTS_DISABLE_TRACING": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
"""Calls some clients make outside the base URL (openai-agents posts traces to a fixed OpenAI
address; litellm fetches a price list at import). Off by default so a replay stays offline and
fast; a flow that wants them sets the variable in agent.env."""
WITHHELD = ("FLOWPROOF_AGENT_KEY", "FLOWPROOF_AGENT_UPSTREAM", "AZURE_OPENAI_AD_TOKEN")
"""flowproof's own record credentials: the agent talks to the proxy and needs neither. An
Azure AD token would also take precedence over the placeholder AZURE_OPENAI_API_KEY in the
AzureOpenAI client, sending a real credential to the proxy."""


def proxy_handles(port: int, capability: Capability) -> dict[str, str]:
    """The `${flowproof.*}` handles a spec can use in `agent.env` and `agent.command`. Both
    carry the flow's capability as the first segment of their path, and so does every
    variable injected from them: a client appends its API's path to the base URL it is given
    (`/v1/chat/completions`, Ollama's `/api/chat`, Gemini's `/v1beta/...`)."""
    base = f"http://127.0.0.1:{port}{capability.prefix}"
    return {"proxy_url": f"{base}/v1", "proxy_url_no_v1": base}


def inherited_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What a process flowproof starts inherits: the user's environment without flowproof's
    record credentials (and, frozen, without the bootloader's LD_LIBRARY_PATH). A real MCP
    server started at record gets exactly this: a tool such as server-everything's `get-env`
    returns its environment, which would otherwise carry the key into the trace. Loopback is
    added to NO_PROXY and no_proxy (proxy_environ.py), for a server that calls back to
    flowproof's stand-ins or to another local service."""
    inherited = host_environ(environ)
    kept = {name: value for name, value in inherited.items() if name not in WITHHELD}
    return loopback_direct(kept)


def agent_environment(
    environ: Mapping[str, str],
    handles: Mapping[str, str],
    prompt: str,
    spec_env: Mapping[str, str],
    injected: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`injected`: more of flowproof's wiring (the MCP stand-ins' variables), before
    `spec_env`."""
    env = inherited_environment(environ)
    env.update({name: handles["proxy_url"] for name in WITH_V1})
    env.update({name: handles["proxy_url_no_v1"] for name in (*WITHOUT_V1, *ORIGIN_ONLY)})
    env.update(dict.fromkeys(PLACEHOLDER_KEYS, PLACEHOLDER_KEY))
    env.update({name: PLACEHOLDER_KEY for name in PLACEHOLDER_IF_SET if name in env})
    env["FLOWPROOF_PROMPT"] = prompt
    env.update({name: value for name, value in QUIET.items() if name not in environ})
    env.update(injected or {})
    env.update({name: resolve(value, environ, handles) for name, value in spec_env.items()})
    return loopback_direct(env)  # again: an `agent.env` NO_PROXY is added to, not obeyed alone


class ToolWiring(Protocol):
    """What a tool boundary tells the agent: its `${flowproof.*}` handles and its variables."""

    def handles(self) -> dict[str, str]: ...

    def environment(self) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class AgentWiring:
    prompt: str
    """The flow's prompt (FLOWPROOF_PROMPT, unless `spec_env` sets it otherwise)."""
    handles: dict[str, str]
    """Every `${flowproof.*}` handle: the proxy's and the tool boundary's."""
    environment: dict[str, str]
    """The agent's whole environment."""


def wire_agent(
    environ: Mapping[str, str],
    port: int,
    capability: Capability,
    tools: ToolWiring,
    prompt: str,
    spec_env: Mapping[str, str],
) -> AgentWiring:
    """The one assembly of an agent's environment, for every driver (a command, a `url:`
    service's before_each, an in-process agent, doctor's): the proxy on `port` with the flow's
    `capability`, the tool boundary's variables, then `spec_env` last."""
    handles = {**proxy_handles(port, capability), **tools.handles()}
    env = agent_environment(environ, handles, prompt, spec_env, tools.environment())
    return AgentWiring(prompt, handles, env)

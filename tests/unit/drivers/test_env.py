"""What a command agent is started with."""

from __future__ import annotations

import pytest

from flowproof.core.errors import ConfigError
from flowproof.drivers.env import (
    PLACEHOLDER_KEY,
    agent_environment,
    inherited_environment,
    proxy_handles,
)
from flowproof.guards.capability import Capability
from flowproof.spec.refs import resolve

CAPABILITY = Capability(token="Tk-1_x")
BASE = "http://127.0.0.1:4646/Tk-1_x"
HANDLES = proxy_handles(4646, CAPABILITY)


def test_injects_proxy_urls_placeholder_keys_and_prompt_and_withholds_secrets() -> None:
    environ = {
        "PATH": "/bin",
        "FLOWPROOF_AGENT_KEY": "sk-real",
        "OPENAI_API_KEY": "sk-real",
        "FLOWPROOF_AGENT_UPSTREAM": "https://api.example",
    }
    env = agent_environment(environ, HANDLES, "Book it", {})
    assert env["PATH"] == "/bin" and env["FLOWPROOF_PROMPT"] == "Book it"
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_BASE", "FLOWPROOF_LLM_PROXY"):
        assert env[name] == f"{BASE}/v1"
    for name in (
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_BASE",
        "GOOGLE_GEMINI_BASE_URL",
        "AZURE_OPENAI_ENDPOINT",
        "OLLAMA_HOST",
    ):
        assert env[name] == BASE
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "AZURE_OPENAI_API_KEY"):
        assert env[name] == PLACEHOLDER_KEY
    assert "GEMINI_API_KEY" not in env and "OLLAMA_API_KEY" not in env
    assert "FLOWPROOF_AGENT_KEY" not in env and "FLOWPROOF_AGENT_UPSTREAM" not in env
    assert "sk-real" not in env.values()


def test_provider_keys_in_the_users_environment_never_reach_the_agent() -> None:
    environ = {
        "GOOGLE_API_KEY": "g-real",
        "GEMINI_API_KEY": "gm-real",
        "AZURE_OPENAI_API_KEY": "az-real",
        "AZURE_OPENAI_AD_TOKEN": "ad-real",
        "OLLAMA_API_KEY": "ol-real",
    }
    env = agent_environment(environ, HANDLES, "p", {})
    assert not {"g-real", "gm-real", "az-real", "ad-real", "ol-real"} & set(env.values())
    assert env["GEMINI_API_KEY"] == env["OLLAMA_API_KEY"] == PLACEHOLDER_KEY
    assert "AZURE_OPENAI_AD_TOKEN" not in env


def test_agent_env_is_applied_last_with_handles() -> None:
    spec_env = {
        "OPENAI_BASE_URL": "${flowproof.proxy_url_no_v1}",
        "GATEWAY": "${flowproof.proxy_url}",
        "LATER": "${flowproof.mcp_url.x}",
        "REGION": "${REGION}",
    }
    env = agent_environment({"REGION": "eu"}, HANDLES, "p", spec_env)
    assert env["OPENAI_BASE_URL"] == BASE
    assert env["GATEWAY"] == f"{BASE}/v1"
    assert env["LATER"] == "${flowproof.mcp_url.x}"  # unknown handle: passed through untouched
    assert env["REGION"] == "eu"


def test_unset_variable_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match=r"\$\{REGION\} is used by the spec but is not set"):
        resolve("${REGION}", {})


def test_side_channels_outside_the_base_url_are_off_unless_the_user_chose() -> None:
    env = agent_environment({}, HANDLES, "p", {})
    assert env["OPENAI_AGENTS_DISABLE_TRACING"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    chosen = agent_environment({"OPENAI_AGENTS_DISABLE_TRACING": "0"}, HANDLES, "p", {})
    assert chosen["OPENAI_AGENTS_DISABLE_TRACING"] == "0"


def test_every_handle_and_injected_base_url_carries_a_fresh_capability() -> None:
    first, second = Capability(), Capability()
    assert first.token != second.token and len(first.token) >= 24
    assert first.token not in repr(first)
    handles = proxy_handles(4646, first)
    env = agent_environment({}, handles, "p", {})
    injected = [value for value in env.values() if value.startswith("http://127.0.0.1:4646")]
    assert len(injected) == 9 and [*handles.values(), *injected]
    for url in [*handles.values(), *injected]:
        assert url.startswith(f"http://127.0.0.1:4646/{first.token}")


def test_loopback_goes_direct_for_the_agent_and_a_flows_no_proxy_is_added_to() -> None:
    """Loopback is appended after agent.env too: a flow's own NO_PROXY keeps its entries."""
    environ = {"HTTPS_PROXY": "http://proxy.corp.test:3128", "NO_PROXY": "corp.example.test"}
    env = agent_environment(environ, HANDLES, "p", {})
    assert env["NO_PROXY"] == env["no_proxy"] == "corp.example.test,127.0.0.1,localhost,::1"
    assert env["HTTPS_PROXY"] == "http://proxy.corp.test:3128"  # the agent's other traffic
    env = agent_environment(environ, HANDLES, "p", {"no_proxy": "flow.example.test"})
    assert env["no_proxy"] == "flow.example.test,127.0.0.1,localhost,::1"
    assert env["NO_PROXY"] == "corp.example.test,127.0.0.1,localhost,::1"


def test_a_real_mcp_server_is_started_with_loopback_direct_too() -> None:
    env = inherited_environment({"no_proxy": "corp.example.test", "FLOWPROOF_AGENT_KEY": "k"})
    assert env["no_proxy"] == env["NO_PROXY"] == "corp.example.test,127.0.0.1,localhost,::1"
    assert "FLOWPROOF_AGENT_KEY" not in env

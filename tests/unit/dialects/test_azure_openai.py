"""Azure OpenAI: which paths are Azure, the deployment the path names, the api-key header and
where record forwards."""

from __future__ import annotations

import pytest

from flowproof.dialects import dialect_for_path, dialect_named
from flowproof.dialects.base import Route
from flowproof.proxy.forward import Upstream

CHAT = dialect_named("azure_openai_chat")
RESPONSES = dialect_named("azure_openai_responses")
assert CHAT is not None and RESPONSES is not None


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/openai/deployments/gpt-4o/chat/completions", "azure_openai_chat"),
        ("/openai/deployments/messages/chat/completions", "azure_openai_chat"),
        ("/openai/v1/chat/completions", "azure_openai_chat"),
        ("/openai/responses", "azure_openai_responses"),
        ("/openai/v1/responses", "azure_openai_responses"),
        # Not Azure: the plain OpenAI paths, wherever a base URL put them.
        ("/v1/chat/completions", "openai_chat"),
        ("/openai/chat/completions", "openai_chat"),
        ("/v1/responses", "openai_responses"),
    ],
)
def test_azure_paths_are_told_from_the_openai_ones_they_end_with(path: str, name: str) -> None:
    dialect = dialect_for_path(path)
    assert dialect is not None and dialect.name == name


def test_a_deployment_path_names_the_deployment_and_is_forwarded_as_it_came() -> None:
    route = CHAT.route("/openai/deployments/prod-4o/chat/completions", "api-version=2024-10-21")
    assert route == Route(
        "/openai/deployments/prod-4o/chat/completions",
        "api-version=2024-10-21",
        path_fields=(("deployment", "prod-4o"),),
    )
    body = route.adopt({"model": "gpt-4o", "messages": []})
    assert list(body) == ["deployment", "model", "messages"]
    assert CHAT.envelope(body).model == "prod-4o"
    assert route.outbound(body) == {"model": "gpt-4o", "messages": []}


def test_the_v1_and_responses_paths_carry_no_deployment() -> None:
    assert CHAT.route("/x/openai/v1/chat/completions", "") == Route("/openai/v1/chat/completions")
    route = RESPONSES.route("/openai/responses", "api-version=1")
    assert route == Route("/openai/responses", "api-version=1")
    assert CHAT.envelope({"model": "dep", "messages": []}).model == "dep"


def test_the_key_travels_in_api_key() -> None:
    assert CHAT.auth_headers("k") == RESPONSES.auth_headers("Bearer k") == {"api-key": "k"}


def test_record_forwards_to_the_endpoint_or_the_origin_of_the_override() -> None:
    route = CHAT.route("/openai/deployments/d/chat/completions", "")
    endpoint = Upstream.from_environ(
        {"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/", "AZURE_OPENAI_API_KEY": "az"}
    )
    assert endpoint.url_for(CHAT, route) == (
        "https://res.openai.azure.com/openai/deployments/d/chat/completions"
    )
    assert endpoint.headers_for(CHAT, {"api-key": "placeholder"})["api-key"] == "az"
    override = Upstream.from_environ({"FLOWPROOF_AGENT_UPSTREAM": "http://127.0.0.1:9/v1"})
    assert (
        override.url_for(CHAT, route) == "http://127.0.0.1:9/openai/deployments/d/chat/completions"
    )
    # No endpoint at all: the URL is not one, and record refuses with the variable's name.
    assert not Upstream.from_environ({}).url_for(CHAT, route).startswith("http")


def test_an_openai_key_is_not_an_azure_key() -> None:
    upstream = Upstream.from_environ({"OPENAI_API_KEY": "sk-openai"})
    assert upstream.key_for(CHAT) is None
    assert "api-key" not in upstream.headers_for(CHAT, {})
    assert upstream.key_for(dialect_named("openai_chat")) == "sk-openai"  # type: ignore[arg-type]

"""Azure OpenAI: the chat completions and Responses APIs at an Azure endpoint's paths.

The bodies are OpenAI's, so the translation is `openai_chat`'s and `openai_responses`'s; what
differs is where the call goes and how the key travels:

- `…/openai/deployments/<deployment>/chat/completions?api-version=…` (the `AzureOpenAI`
  client), `…/openai/responses?api-version=…`, and the v1 API's `…/openai/v1/chat/completions`
  and `…/openai/v1/responses`. A deployment in the path is the model Azure runs, so it is
  folded into the stored body as `deployment` and matched, and the divergence envelope shows
  it as the model; on the other paths the body's `model` names the deployment already.
- Record forwards the agent's path from `/openai/` on, with its query (the `api-version`),
  to AZURE_OPENAI_ENDPOINT, with the key in `api-key`.

These are dialects of their own (`azure_openai_chat`, `azure_openai_responses`): a trace
recorded against Azure says so, and replays against Azure paths only.
"""

from __future__ import annotations

import re
from typing import Any

from flowproof.dialects.base import Envelope, Route
from flowproof.dialects.openai_chat import OpenAIChat
from flowproof.dialects.openai_responses import OpenAIResponses

DEPLOYMENT = "deployment"
"""The body key a path's deployment is stored under."""
_KEYS = ("FLOWPROOF_AGENT_KEY", "AZURE_OPENAI_API_KEY")
_DEPLOYMENT = re.compile(r"/openai/deployments/(?P<deployment>[^/]+)/")


class AzureOpenAIChat(OpenAIChat):
    name = "azure_openai_chat"
    path_marker = "/openai/deployments/<deployment>/chat/completions"
    path_pattern = r"/openai/(?:deployments/[^/]+/|v1/)chat/completions"
    upstream_path = "/openai/v1/chat/completions"
    upstream_from_origin = True
    upstream_variable = "AZURE_OPENAI_ENDPOINT"
    default_upstream = ""  # every Azure resource has its own endpoint: there is no default
    key_variables = _KEYS

    def route(self, path: str, query: str) -> Route:
        return azure_route(path, query, self.path_pattern, self.upstream_path)

    def auth_headers(self, key: str) -> dict[str, str]:
        return api_key_header(key)

    def envelope(self, request: Any) -> Envelope:
        return deployment_envelope(super().envelope(request), request)


class AzureOpenAIResponses(OpenAIResponses):
    name = "azure_openai_responses"
    path_marker = "/openai/responses"
    path_pattern = r"/openai/(?:v1/)?responses"
    upstream_path = "/openai/v1/responses"
    upstream_from_origin = True
    upstream_variable = "AZURE_OPENAI_ENDPOINT"
    default_upstream = ""
    key_variables = _KEYS

    def route(self, path: str, query: str) -> Route:
        return azure_route(path, query, self.path_pattern, self.upstream_path)

    def auth_headers(self, key: str) -> dict[str, str]:
        return api_key_header(key)


def azure_route(path: str, query: str, pattern: str | None, fallback: str) -> Route:
    """The agent's path from `/openai/` on, its query, and the deployment it names."""
    found = re.search(f"(?:{pattern})$", path.rstrip("/")) if pattern else None
    if found is None:
        return Route(fallback, query)
    tail = found.group(0)
    deployment = _DEPLOYMENT.match(tail)
    fields = ((DEPLOYMENT, deployment["deployment"]),) if deployment else ()
    return Route(tail, query, path_fields=fields)


def api_key_header(key: str) -> dict[str, str]:
    """Azure takes the bare key in `api-key`; a `Bearer ` prefix is dropped."""
    if key[:7].lower() == "bearer ":
        key = key[7:].strip()
    return {"api-key": key}


def deployment_envelope(envelope: Envelope, request: Any) -> Envelope:
    deployment = request.get(DEPLOYMENT) if isinstance(request, dict) else None
    if deployment is None:
        return envelope
    return Envelope(model=deployment, tools=envelope.tools, roles=envelope.roles)

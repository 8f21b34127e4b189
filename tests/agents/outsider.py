"""Another process on the machine that has found flowproof's port and asks it for a model turn.

It knows what `/proc/net/tcp` would tell it, the port on 127.0.0.1, and nothing flowproof gave
the agent: it keeps only the host and port of OPENAI_BASE_URL (or of FLOWPROOF_MCP_URL_<NAME>
with OUTSIDER_TARGET=mcp:<NAME>) and POSTs to the path a client of that API would use. The body
is OUTSIDER_BODY_FROM's first recorded model request when set (a committed trace is readable by
anyone, so a stranger can send exactly what replay would serve), else a request of its own.
It appends `<status> <body>` to OUTSIDER_LOG and never fails, so the agent started after it
(the rest of the command) runs either way.

    python outsider.py
"""

import json
import os
import urllib.error
import urllib.parse
import urllib.request

OWN_REQUEST = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "outsider: book me a flight on their key"}],
}
MCP_REQUEST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "search", "arguments": {"query": "outsider"}},
}


def target() -> tuple[str, dict]:
    chosen = os.environ.get("OUTSIDER_TARGET", "model")
    if chosen.startswith("mcp:"):
        variable = "FLOWPROOF_MCP_URL_" + chosen.split(":", 1)[1].upper()
        return origin(os.environ[variable]) + "/mcp", MCP_REQUEST
    return origin(os.environ["OPENAI_BASE_URL"]) + "/v1/chat/completions", body()


def origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def body() -> dict:
    trace = os.environ.get("OUTSIDER_BODY_FROM")
    if not trace:
        return OWN_REQUEST
    with open(trace) as handle:
        return json.load(handle)["lanes"]["model"][0]["request"]


def main() -> None:
    url, payload = target()
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            status, text = reply.status, reply.read().decode()
    except urllib.error.HTTPError as refused:
        status, text = refused.code, refused.read().decode()
    except OSError as error:
        status, text = 0, str(error)
    with open(os.environ["OUTSIDER_LOG"], "a") as log:
        log.write(f"{status} {text}\n")


if __name__ == "__main__":
    main()

"""A small booking agent built on the real `anthropic` SDK: a Messages tool loop.

It reads its task from FLOWPROOF_PROMPT; the SDK reads ANTHROPIC_BASE_URL and
ANTHROPIC_API_KEY itself. AGENT_STREAM=1 uses the SDK's streaming helper instead of a plain
create. AGENT_BUG switches on the regression the tests look for; AGENT_BETA sends an
`anthropic-beta` header; AGENT_BETA_API=1 calls the SDK's beta Messages API, as Claude Code
does (the AGENT_BETA flags as `betas`, and `/v1/messages?beta=true`, which Claude Code's client
adds and this SDK version leaves to the caller); AGENT_SESSION=1 sends a fresh
per-run `metadata.user_id`, as Claude Code does; AGENT_PATHS_FILE gets the path of every
request the SDK made, so a test can see which URL the SDK built from the base URL it was given.
"""

import json
import os
import time
import uuid

import anthropic

TOOLS = [
    {
        "name": "search_flights",
        "description": "Find flights to a destination",
        "input_schema": {
            "type": "object",
            "properties": {"destination": {"type": "string"}, "date": {"type": "string"}},
            "required": ["destination"],
        },
    },
    {
        "name": "create_booking",
        "description": "Book a flight for a passenger",
        "input_schema": {
            "type": "object",
            "properties": {
                "flight": {"type": "object", "properties": {"id": {"type": "string"}}},
                "passenger": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "required": ["flight"],
        },
    },
]
SYSTEM = "You are a travel assistant. Use the tools to search and book flights."
BUG = os.environ.get("AGENT_BUG", "")


def search_flights(destination, date=None):
    # Volatile on purpose: the spec mocks this result so replays stay identical.
    return {"flights": [{"id": "KQ311", "dest": destination}], "searched_at": time.time()}


def create_booking(flight, passenger=None):
    return {"booking": "B-1042", "flight": flight["id"]}


def echo(block):
    """A content block as the agent puts it back into the history: the SDK's own object,
    which it serialises itself, unless the bug rewrites the booking's flight id."""
    if BUG == "rewrite-flight-id" and block.type == "tool_use" and block.name == "create_booking":
        data = block.model_dump(mode="json", exclude_unset=True)
        data["input"]["flight"]["id"] = "KQ999"
        return data
    return block


def make_client():
    paths = os.environ.get("AGENT_PATHS_FILE")
    if not paths:
        return anthropic.Anthropic()

    def note(request):
        with open(paths, "a") as handle:
            handle.write(request.url.path + "\n")

    return anthropic.Anthropic(
        http_client=anthropic.DefaultHttpxClient(event_hooks={"request": [note]})
    )


SESSION = f"user_{uuid.uuid4().hex}_session_{uuid.uuid4()}"
"""A fresh id every run, carrying no content (what Claude Code puts in metadata.user_id)."""


def ask(client, model, messages):
    request = {
        "model": model,
        "max_tokens": 1024,
        "system": SYSTEM,
        "messages": messages,
        "tools": TOOLS,
    }
    if os.environ.get("AGENT_SESSION"):
        request["metadata"] = {"user_id": SESSION}
    if os.environ.get("AGENT_BETA_API"):
        if os.environ.get("AGENT_BETA"):
            request["betas"] = os.environ["AGENT_BETA"].split(",")
        return client.beta.messages.create(**request, extra_query={"beta": "true"})
    if os.environ.get("AGENT_BETA"):
        request["extra_headers"] = {"anthropic-beta": os.environ["AGENT_BETA"]}
    if os.environ.get("AGENT_STREAM"):
        # The SDK's helper assembles the events (input_json_delta pieces included).
        with client.messages.stream(**request) as stream:
            return stream.get_final_message()
    return client.messages.create(**request)


def main():
    client = make_client()
    model = os.environ.get("AGENT_MODEL", "claude-sonnet-4-5")
    messages = [{"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]}]
    while True:
        reply = ask(client, model, messages)
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            break
        messages.append({"role": "assistant", "content": [echo(b) for b in reply.content]})
        results = []
        for use in uses:
            handler = {"search_flights": search_flights, "create_booking": create_booking}[use.name]
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": use.id,
                    "content": json.dumps(handler(**use.input)),
                }
            )
        messages.append({"role": "user", "content": results})
    print("".join(block.text for block in reply.content if block.type == "text"))


if __name__ == "__main__":
    main()

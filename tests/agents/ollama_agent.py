"""A small booking agent on the real `ollama` Python client: an /api/chat tool loop.

It reads its task from FLOWPROOF_PROMPT; `ollama.Client()` reads OLLAMA_HOST itself.
AGENT_STREAM=1 asks for a stream (NDJSON) and assembles the parts; AGENT_BUG=rewrite-flight-id
echoes the booking call back with another flight id; AGENT_PATHS_FILE gets the path of every
request the client made.
"""

import json
import os
import time

import ollama

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Find flights to a destination",
            "parameters": {
                "type": "object",
                "properties": {"destination": {"type": "string"}, "date": {"type": "string"}},
                "required": ["destination"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "create_booking",
            "description": "Book a flight for a passenger",
            "parameters": {
                "type": "object",
                "properties": {
                    "flight": {"type": "object", "properties": {"id": {"type": "string"}}},
                    "passenger": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
                "required": ["flight"],
            },
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


HANDLERS = {"search_flights": search_flights, "create_booking": create_booking}


def make_client():
    paths = os.environ.get("AGENT_PATHS_FILE")
    if not paths:
        return ollama.Client()

    def note(request):
        with open(paths, "a") as handle:
            handle.write(request.url.path + "\n")

    return ollama.Client(event_hooks={"request": [note]})


def ask(client, model, messages):
    """One model turn as (content, tool calls), whichever transport is used."""
    if os.environ.get("AGENT_STREAM"):
        content, calls = "", []
        for part in client.chat(model=model, messages=messages, tools=TOOLS, stream=True):
            content += part.message.content or ""
            calls += part.message.tool_calls or []
        return content, calls
    reply = client.chat(model=model, messages=messages, tools=TOOLS)
    return reply.message.content or "", list(reply.message.tool_calls or [])


def echo(call):
    arguments = dict(call.function.arguments)
    if BUG == "rewrite-flight-id" and call.function.name == "create_booking":
        arguments["flight"] = {"id": "KQ999"}
    return {"function": {"name": call.function.name, "arguments": arguments}}


def main():
    client = make_client()
    model = os.environ.get("AGENT_MODEL", "llama3.2")
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    while True:
        content, calls = ask(client, model, messages)
        if not calls:
            break
        messages.append(
            {"role": "assistant", "content": content, "tool_calls": [echo(c) for c in calls]}
        )
        for call in calls:
            result = HANDLERS[call.function.name](**call.function.arguments)
            messages.append(
                {"role": "tool", "content": json.dumps(result), "tool_name": call.function.name}
            )
    print(content)


if __name__ == "__main__":
    main()

"""A small booking agent on the real `openai` SDK's `AzureOpenAI` client.

It reads its task from FLOWPROOF_PROMPT; the client reads AZURE_OPENAI_ENDPOINT and
AZURE_OPENAI_API_KEY itself (the API version is the agent's choice, as it is in real code).
AGENT_API picks the path:
  chat (default)  chat completions at /openai/deployments/<deployment>/chat/completions
  responses       Responses at /openai/responses
  v1              chat completions at /openai/v1/chat/completions (the plain `OpenAI` client on
                  the endpoint's v1 base URL, where the deployment is the body's model)
AGENT_DEPLOYMENT names the deployment; AGENT_STREAM=1 streams the chat completions;
AGENT_BUG=rewrite-flight-id echoes the booking call back with another flight id;
AGENT_PATHS_FILE gets the path (and query) of every request the SDK made.
"""

import json
import os
import time

from openai import AzureOpenAI, DefaultHttpxClient, OpenAI

PARAMETERS = {
    "search_flights": {
        "type": "object",
        "properties": {"destination": {"type": "string"}, "date": {"type": "string"}},
        "required": ["destination"],
    },
    "create_booking": {
        "type": "object",
        "properties": {
            "flight": {"type": "object", "properties": {"id": {"type": "string"}}},
            "passenger": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
        "required": ["flight"],
    },
}
CHAT_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": schema}}
    for name, schema in PARAMETERS.items()
]
RESPONSES_TOOLS = [
    {"type": "function", "name": name, "parameters": schema} for name, schema in PARAMETERS.items()
]
SYSTEM = "You are a travel assistant. Use the tools to search and book flights."
API = os.environ.get("AGENT_API", "chat")
BUG = os.environ.get("AGENT_BUG", "")


def search_flights(destination, date=None):
    # Volatile on purpose: the spec mocks this result so replays stay identical.
    return {"flights": [{"id": "KQ311", "dest": destination}], "searched_at": time.time()}


def create_booking(flight, passenger=None):
    return {"booking": "B-1042", "flight": flight["id"]}


HANDLERS = {"search_flights": search_flights, "create_booking": create_booking}


def arguments(name, raw):
    """The call's arguments as the agent echoes them, rewritten by the bug."""
    if BUG == "rewrite-flight-id" and name == "create_booking":
        parsed = json.loads(raw)
        parsed["flight"]["id"] = "KQ999"
        return json.dumps(parsed)
    return raw


def make_client():
    options = {}
    if os.environ.get("AGENT_PATHS_FILE"):

        def note(request):
            with open(os.environ["AGENT_PATHS_FILE"], "a") as handle:
                query = f"?{request.url.query.decode()}" if request.url.query else ""
                handle.write(request.url.path + query + "\n")

        options["http_client"] = DefaultHttpxClient(event_hooks={"request": [note]})
    if API == "v1":
        endpoint = os.environ["AZURE_OPENAI_ENDPOINT"].rstrip("/")
        key = os.environ["AZURE_OPENAI_API_KEY"]
        return OpenAI(base_url=f"{endpoint}/openai/v1/", api_key=key, **options)
    return AzureOpenAI(api_version="2024-10-21", **options)


def chat_turn(client, deployment, messages):
    if os.environ.get("AGENT_STREAM"):
        with client.chat.completions.stream(
            model=deployment, messages=messages, tools=CHAT_TOOLS
        ) as stream:
            return stream.get_final_completion().choices[0].message
    reply = client.chat.completions.create(model=deployment, messages=messages, tools=CHAT_TOOLS)
    return reply.choices[0].message


def chat(client, deployment):
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    while True:
        message = chat_turn(client, deployment, messages)
        if not message.tool_calls:
            return message.content
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.function.name,
                    "arguments": arguments(call.function.name, call.function.arguments),
                },
            }
            for call in message.tool_calls
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for call in message.tool_calls:
            result = HANDLERS[call.function.name](**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


def responses(client, deployment):
    items = [{"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]}]
    while True:
        reply = client.responses.create(
            model=deployment, instructions=SYSTEM, input=items, tools=RESPONSES_TOOLS
        )
        calls = [item for item in reply.output if item.type == "function_call"]
        if not calls:
            return reply.output_text
        for call in calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": arguments(call.name, call.arguments),
                }
            )
            result = HANDLERS[call.name](**json.loads(call.arguments))
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps(result),
                }
            )


def main():
    client = make_client()
    deployment = os.environ.get("AGENT_DEPLOYMENT", "booking-gpt-4o")
    print(responses(client, deployment) if API == "responses" else chat(client, deployment))


if __name__ == "__main__":
    main()

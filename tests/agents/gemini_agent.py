"""A small booking agent built on the real `google-genai` SDK: a generateContent tool loop.

It reads its task from FLOWPROOF_PROMPT; the SDK reads GOOGLE_GEMINI_BASE_URL and
GOOGLE_API_KEY itself. Automatic function calling is OFF, so the loop below runs the tools and
sends their results back as `functionResponse` parts. AGENT_STREAM=1 calls
`generate_content_stream` and assembles the chunks; AGENT_BUG=rewrite-flight-id echoes the
booking call back with another flight id; AGENT_MODEL picks the model; AGENT_PATHS_FILE gets
the path (and query) of every request the SDK made.
"""

import os
import time

from google import genai
from google.genai import types

DECLARATIONS = [
    types.FunctionDeclaration(
        name="search_flights",
        description="Find flights to a destination",
        parameters_json_schema={
            "type": "object",
            "properties": {"destination": {"type": "string"}, "date": {"type": "string"}},
            "required": ["destination"],
        },
    ),
    types.FunctionDeclaration(
        name="create_booking",
        description="Book a flight for a passenger",
        parameters_json_schema={
            "type": "object",
            "properties": {
                "flight": {"type": "object", "properties": {"id": {"type": "string"}}},
                "passenger": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "required": ["flight"],
        },
    ),
]
CONFIG = types.GenerateContentConfig(
    system_instruction="You are a travel assistant. Use the tools to search and book flights.",
    tools=[types.Tool(function_declarations=DECLARATIONS)],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)
BUG = os.environ.get("AGENT_BUG", "")


def search_flights(destination, date=None):
    # Volatile on purpose: the spec mocks this result so replays stay identical.
    return {"flights": [{"id": "KQ311", "dest": destination}], "searched_at": time.time()}


def create_booking(flight, passenger=None):
    return {"booking": "B-1042", "flight": flight["id"]}


def make_client():
    paths = os.environ.get("AGENT_PATHS_FILE")
    if not paths:
        return genai.Client()

    import httpx

    def note(request):
        with open(paths, "a") as handle:
            query = f"?{request.url.query.decode()}" if request.url.query else ""
            handle.write(request.url.path + query + "\n")

    http = httpx.Client(event_hooks={"request": [note]})
    return genai.Client(http_options=types.HttpOptions(httpx_client=http))


def ask(client, model, contents):
    """The model's answer as one Content: streamed chunks' parts joined in order."""
    if os.environ.get("AGENT_STREAM"):
        parts = []
        for chunk in client.models.generate_content_stream(
            model=model, contents=contents, config=CONFIG
        ):
            if chunk.candidates and chunk.candidates[0].content:
                parts += chunk.candidates[0].content.parts or []
        return types.Content(role="model", parts=parts)
    reply = client.models.generate_content(model=model, contents=contents, config=CONFIG)
    return reply.candidates[0].content


def echo(content):
    """The model's content as the agent puts it back into the history, unless the bug
    rewrites the booking's flight id."""
    if BUG != "rewrite-flight-id":
        return content
    for part in content.parts:
        call = part.function_call
        if call is not None and call.name == "create_booking":
            call.args = {**call.args, "flight": {"id": "KQ999"}}
    return content


def main():
    client = make_client()
    model = os.environ.get("AGENT_MODEL", "gemini-2.5-flash")
    contents = [types.Content(role="user", parts=[types.Part(text=os.environ["FLOWPROOF_PROMPT"])])]
    while True:
        answer = ask(client, model, contents)
        calls = [part.function_call for part in answer.parts if part.function_call]
        if not calls:
            break
        contents.append(echo(answer))
        handlers = {"search_flights": search_flights, "create_booking": create_booking}
        results = [
            types.Part.from_function_response(
                name=call.name, response=handlers[call.name](**call.args)
            )
            for call in calls
        ]
        contents.append(types.Content(role="user", parts=results))
    print("".join(part.text or "" for part in answer.parts))


if __name__ == "__main__":
    main()

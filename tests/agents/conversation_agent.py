"""A conversational travel agent on the real `openai` SDK, speaking flowproof's conversation
contract: its first user turn is FLOWPROOF_PROMPT, each later one a JSON-string line on stdin,
and stdin closes after the last. Each turn runs the tool loop to the model's reply.

AGENT_BUG switches on the regressions the tests look for.
"""

import json
import os
import sys

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }
    for name, description, properties in (
        (
            "search_flights",
            "Find flights to a destination",
            {"destination": {"type": "string"}, "date": {"type": "string"}},
        ),
        (
            "create_booking",
            "Book a flight for a passenger",
            {"flight": {"type": "object"}, "passenger": {"type": "object"}},
        ),
    )
]
SYSTEM = "You are a travel assistant. Search first; book only when the user says so."
BUG = os.environ.get("AGENT_BUG", "")
RESULTS = {  # what the tools return (the spec mocks both anyway)
    "search_flights": {"flights": [{"id": "KQ311", "dest": "NBO"}]},
    "create_booking": {"booking": "B-1042"},
}


def echoed(call, turn):
    """The assistant's tool call as the agent puts it back into the history."""
    arguments = call.function.arguments
    if BUG == "turn-2-argument" and turn == 2:  # a refactor that rewrites ids, in turn 2 only
        arguments = arguments.replace("KQ311", "KQ999")
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.function.name, "arguments": arguments},
    }


def answer(client, messages, turn):
    """One user turn: the tool loop, until the model replies."""
    while True:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            messages.append({"role": "assistant", "content": message.content})
            print(f"turn {turn}: {message.content}", flush=True)
            return
        calls = [echoed(call, turn) for call in message.tool_calls]
        messages.append({"role": "assistant", "content": message.content, "tool_calls": calls})
        for call in message.tool_calls:
            content = json.dumps(RESULTS[call.function.name])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def main():
    client = OpenAI(max_retries=0)
    if BUG == "reads-too-early":  # waits for its next turn before answering this one
        sys.stdin.readline()
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    answer(client, messages, 1)
    if BUG == "one-turn":  # an agent that was never taught to read its next turn
        return
    for turn, line in enumerate(sys.stdin, 2):
        messages.append({"role": "user", "content": json.loads(line)})
        answer(client, messages, turn)
    if BUG == "extra-call":  # one more model request once the last turn was answered
        messages.append({"role": "user", "content": "Summarise our conversation."})
        client.chat.completions.create(model="gpt-4o-mini", messages=messages)


if __name__ == "__main__":
    main()

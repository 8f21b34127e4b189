"""A travel assistant: an ordinary OpenAI chat-completions agent with a tool loop.

Nothing in here knows about flowproof. The `openai` SDK reads OPENAI_BASE_URL and
OPENAI_API_KEY from the environment, which is how flowproof points it at its proxy.

    python3 examples/agent-demo/agent.py "Book a flight to Nairobi on 2026-12-01 for Casey Lee."
"""

import hashlib
import json
import os
import sys
import time
import uuid

from openai import OpenAI

MODEL = os.environ.get("TRAVEL_AGENT_MODEL", "gpt-4o-mini")
MAX_TURNS = 8  # a runaway loop is a bug; stop rather than spin

SYSTEM_PROMPT = (
    "You are a travel assistant. Always search for flights before booking. "
    "Book the flight the user asked for (the cheapest one if they asked for cheapest) "
    "and finish by telling them the flight and the booking reference."
)

# The tool schemas the model is offered. They are part of every request, so they are
# part of what a recording pins down.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Search available flights to a destination on a date.",
            "parameters": {
                "type": "object",
                "properties": {
                    "destination": {"type": "string", "description": "City or airport"},
                    "date": {"type": "string", "description": "YYYY-MM-DD"},
                },
                "required": ["destination", "date"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "create_booking",
            "description": "Book one flight, by its id from search_flights, for a passenger.",
            "parameters": {
                "type": "object",
                "properties": {
                    "flight_id": {"type": "string"},
                    "passenger": {"type": "string", "description": "Full name"},
                },
                "required": ["flight_id", "passenger"],
            },
        },
    },
]


def search_flights(destination, date):
    """Stand-in for a fares API. Like a real one, every answer is different: a fresh quote
    id and timestamp each call. That is why the spec mocks this tool's result."""
    return {
        "quote_id": uuid.uuid4().hex,
        "searched_at": time.time(),
        "flights": [
            {
                "id": "KQ311",
                "airline": "Kenya Airways",
                "departs": f"{date}T08:40",
                "price_usd": 612,
            },
            {"id": "ET309", "airline": "Ethiopian", "departs": f"{date}T13:15", "price_usd": 548},
        ],
    }


def create_booking(flight_id, passenger):
    """Stand-in for a booking API. Deterministic: the same booking gets the same reference."""
    reference = "BK-" + hashlib.sha256(f"{flight_id}:{passenger}".encode()).hexdigest()[:6].upper()
    return {
        "status": "confirmed",
        "booking_ref": reference,
        "flight_id": flight_id,
        "passenger": passenger,
    }


HANDLERS = {"search_flights": search_flights, "create_booking": create_booking}


def run(task):
    client = OpenAI()
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task}]
    for _ in range(MAX_TURNS):
        message = (
            client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            .choices[0]
            .message
        )
        if not message.tool_calls:
            return message.content  # no tool requested: this is the final answer
        # Put the model's request back into the history, then answer each call with its result.
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                    for call in message.tool_calls
                ],
            }
        )
        for call in message.tool_calls:
            handler = HANDLERS.get(call.function.name)
            result = (
                handler(**json.loads(call.function.arguments))
                if handler
                else {"error": f"no tool named {call.function.name}"}
            )
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    raise SystemExit(f"gave up after {MAX_TURNS} model turns without a final answer")


if __name__ == "__main__":
    # Under flowproof the task arrives in FLOWPROOF_PROMPT; by hand, pass it as arguments.
    task = os.environ.get("FLOWPROOF_PROMPT") or " ".join(sys.argv[1:])
    if not task:
        raise SystemExit("usage: agent.py <task>   (or set FLOWPROOF_PROMPT)")
    print(run(task))

"""A deterministic, OpenAI-compatible stand-in model, for recording this demo without a key.

It answers POST /v1/chat/completions the way a capable model would for this one task:

  1. the user asked for a flight      -> call search_flights(destination, date)
  2. search_flights answered          -> call create_booking(cheapest flight id, passenger)
  3. create_booking answered          -> reply in text with the flight and booking reference

Each decision is read from the conversation it is sent, never from a fixed script: the flight
id it books is picked from the search_flights result in the tool message (which, during
`flowproof record`, is the spec's mocked result), so the chain from one tool to the next is real.
Where a real model understands language, this uses three regular expressions.

    python3 examples/agent-demo/scripted_model.py --port 8711
"""

import argparse
import json
import re

from aiohttp import web


def decide(messages):
    """The next assistant message for this conversation: tool calls or a final text."""
    task = next(m["content"] for m in messages if m["role"] == "user")
    passenger = _find(r"\bfor ([A-Z][a-z]+(?: [A-Z][a-z]+)*)", task, "the traveller")
    last = messages[-1]
    if last["role"] == "user":
        return _call(
            messages,
            "search_flights",
            {
                "destination": _find(r"\bto ([A-Z][a-z]+(?: [A-Z][a-z]+)*)", task, "unknown"),
                "date": _find(r"\d{4}-\d{2}-\d{2}", task, "unknown"),
            },
        )
    if last["role"] == "tool":
        tool = _tool_name(messages, last["tool_call_id"])
        result = json.loads(last["content"])
        if tool == "search_flights" and result.get("flights"):
            cheapest = min(result["flights"], key=lambda flight: flight["price_usd"])
            return _call(
                messages, "create_booking", {"flight_id": cheapest["id"], "passenger": passenger}
            )
        if tool == "create_booking":
            return {
                "role": "assistant",
                "content": (
                    f"Booked: {result['passenger']} is confirmed on flight {result['flight_id']}. "
                    f"Your booking reference is {result['booking_ref']}."
                ),
            }
    return {"role": "assistant", "content": "Sorry, I could not complete that booking."}


def _find(pattern, text, default):
    match = re.search(pattern, text)
    return match.group(match.lastindex or 0) if match else default


def _tool_name(messages, call_id):
    for message in messages:
        for call in message.get("tool_calls") or []:
            if call["id"] == call_id:
                return call["function"]["name"]
    return None


def _call(messages, name, arguments):
    # Deterministic call ids: call_1, call_2, ... by position in the conversation.
    number = 1 + sum(len(m.get("tool_calls") or []) for m in messages)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{number}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


async def chat_completions(request):
    body = await request.json()
    message = decide(body["messages"])
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant") + 1
    print(f"turn {turn}: {json.dumps(message.get('tool_calls') or message['content'])}", flush=True)
    return web.json_response(
        {
            "id": f"chatcmpl-scripted-{turn}",
            "object": "chat.completion",
            "created": 1767225600,
            "model": body.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8711)
    args = parser.parse_args()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat_completions)
    # Loopback only: this is a test double, not a service.
    web.run_app(app, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()

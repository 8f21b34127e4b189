"""An agent that talks to the model about two things at once, like goose or openai-agents:
the task (a tool loop) and, concurrently, a session title with its own system prompt that it
does not wait for before starting the task."""

import asyncio
import json
import os

from flight_tools import TOOLS
from openai import AsyncOpenAI


async def title(client):
    # AGENT_TITLE_DELAY makes the side call land after the task has replied.
    await asyncio.sleep(float(os.environ.get("AGENT_TITLE_DELAY", "0")))
    reply = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "Name this session in three words."},
            {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
        ],
    )
    return reply.choices[0].message.content


async def task(client):
    messages = [
        {"role": "system", "content": "You are a travel assistant with tools."},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    while True:
        reply = await client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = {"ok": True, "tool": call.function.name, **json.loads(call.function.arguments)}
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


async def main():
    client = AsyncOpenAI()
    session_title, answer = await asyncio.gather(title(client), task(client))
    print(f"[{session_title}] {answer}")


if __name__ == "__main__":
    asyncio.run(main())

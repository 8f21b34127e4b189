"""A long-running agent service (aiohttp) that runs one booking turn per POST /task.

A POST that names a `conversation_id` (flowproof's conversation contract for `url:` services)
continues that conversation's history; one without starts afresh. POST /chat takes the same in
a shape of the service's own, `{"input": {"text": ...}, "session": ...}`, which a spec's
`agent.body` must produce.

Started by the tests with OPENAI_BASE_URL already pointing wherever the test wants: the point
of a `url:` flow is that flowproof does not start the service and cannot set its environment.

    python service_agent.py PORT
"""

import json
import os
import sys

from aiohttp import web
from flight_tools import TOOLS
from openai import AsyncOpenAI

CONVERSATIONS: dict[str, list] = {}


async def task(request: web.Request) -> web.Response:
    body = await request.json()
    return await answer(body["prompt"], body.get("conversation_id"))


async def chat(request: web.Request) -> web.Response:
    body = await request.json()
    return await answer(body["input"]["text"], body["session"])


async def answer(prompt: str, conversation: str | None) -> web.Response:
    client = AsyncOpenAI(api_key="service-key", max_retries=0)
    system = {"role": "system", "content": "You are a travel service."}
    messages = CONVERSATIONS.setdefault(conversation, [system]) if conversation else [system]
    messages.append({"role": "user", "content": prompt})
    try:
        while True:
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                messages.append({"role": "assistant", "content": message.content})
                return web.json_response({"reply": message.content})
            if os.environ.get("SERVICE_BUG") == "answer-early":  # skips the rest of its loop
                return web.json_response({"reply": "done early"})
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = {"ok": True, **json.loads(call.function.arguments)}
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
                )
    except Exception as exc:  # a service answers errors; it does not crash
        return web.json_response({"error": str(exc)}, status=500)


app = web.Application()
app.router.add_post("/task", task)
app.router.add_post("/chat", chat)
app.router.add_get("/health", lambda request: web.Response(text="ok"))

if __name__ == "__main__":
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)

"""The bench's agent: a plain openai-SDK chat-completions tool loop, ten model turns per run.

It reads its task from FLOWPROOF_PROMPT and its base URL from OPENAI_BASE_URL (the SDK does
that itself), like tests/agents/openai_chat_agent.py, but its one tool is deterministic, so the
same run replays against flowproof, a canned stub or a vcrpy cassette alike. `run(client)` is
the loop, so vcrpy can drive it inside one pytest session.
"""

import json
import os

from itinerary import SYSTEM, TOOLS, lookup  # bench/, the script's directory
from openai import OpenAI


def run(client, prompt, *, stream=False):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    while True:
        if stream:
            with client.chat.completions.stream(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            ) as events:
                reply = events.get_final_completion()
        else:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
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
            result = lookup(**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


def main():
    print(run(OpenAI(max_retries=0), os.environ["FLOWPROOF_PROMPT"]))


if __name__ == "__main__":
    main()

"""A small agent on the real `openai` SDK that changes what it sends after its first request,
the way coding-agent CLIs do: from its second request on it offers a tool it loads late, whose
description names its per-project state directory (under the home directory, with the working
directory as a slug), and it stamps every request with a fresh turn id in `metadata`.

Like those CLIs, it answers a call to a tool it does not offer with an error tool result and
goes on, rather than stopping. Its first request carries nothing that varies between runs.
"""

import os
import re
import uuid

from openai import OpenAI


def tool(name, description):
    parameters = {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


FIRST_TOOLS = [tool("list_notes", "List the titles of the user's notes")]


def late_tools():
    slug = re.sub(r"[^A-Za-z0-9]", "-", os.getcwd())
    state = os.path.join(os.path.expanduser("~"), ".notekeeper", "projects", slug)
    return [*FIRST_TOOLS, tool("read_memory", f"Read what was learnt here, kept in {state}/")]


def run_tool(name):
    if name == "list_notes":
        return "groceries, flight to Nairobi"
    return f"error: no such tool: {name}"


def main():
    client = OpenAI()
    messages = [
        {"role": "system", "content": "You are a note-keeping agent."},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    for turn in range(5):
        request = {"model": "gpt-4o-mini", "messages": messages, "tools": FIRST_TOOLS}
        if turn:
            request |= {"tools": late_tools(), "metadata": {"turn_id": str(uuid.uuid4())}}
        message = client.chat.completions.create(**request).choices[0].message
        if not message.tool_calls:
            print(message.content)
            return
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
            content = run_tool(call.function.name)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


if __name__ == "__main__":
    main()

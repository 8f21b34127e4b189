"""A small coding agent on the real `openai` SDK, shaped like the coding-agent CLIs: its system
prompt carries its working directory, its home, today's date (local time, as those CLIs print
it) and a listing of the directory; its one tool reads a file by absolute path.

The model's tool call names an absolute path, so a replay elsewhere only reads the right file
if the path it is served is today's checkout's. AGENT_MODEL picks the model name;
AGENT_WALL_TIME makes the tool's output end with a time that differs in every run.
AGENT_STATE=1 adds what the coding-agent CLIs also print: the temporary directory, the working
directory under `~`, and the per-project state directory named by the slug of the working
directory (`/work/app` → `~/.agent/projects/-work-app`), as Claude Code names its own.
"""

import datetime
import json
import os
import re
import tempfile
import time

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file, given its absolute path",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


def system_prompt():
    today = datetime.date.today()
    listing = ", ".join(sorted(os.listdir(".")))
    return (
        "You are a coding agent.\n"
        f"Working directory: {os.getcwd()}\n"
        f"Home: {os.path.expanduser('~')}\n"
        f"Today's date: {today.isoformat()} ({today.strftime('%A')})\n"
        f"Files here: {listing}" + (state() if os.environ.get("AGENT_STATE") == "1" else "")
    )


def state():
    cwd = os.getcwd()
    slug = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    return (
        f"\nScratch directory: {tempfile.gettempdir()}\n"
        f"Project: {cwd.replace(os.path.expanduser('~'), '~', 1)}\n"
        f"Memory: ~/.agent/projects/{slug}/memory.md (project id {slug.lstrip('-')})\n"
        f"Settings: {os.path.expanduser('~/.agent/settings.json')}"
    )


def read_file(path):
    try:
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
    except OSError as exc:
        return f"error: {exc}"
    if os.environ.get("AGENT_WALL_TIME"):  # a shell tool's output: it says how long it took
        content += f"Wall time: {time.perf_counter_ns()} ns\n"
    return content


def main():
    client = OpenAI()
    messages = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    model = os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    while True:
        reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            break
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
            content = read_file(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    print(message.content)


if __name__ == "__main__":
    main()

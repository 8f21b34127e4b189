"""A small booking agent built on the real `openai` SDK: a chat-completions tool loop.

It reads its task from FLOWPROOF_PROMPT and its base URL from OPENAI_BASE_URL (the SDK does
that itself). AGENT_* variables switch on the regressions the tests look for.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Find flights to a destination",
            "parameters": {
                "type": "object",
                "properties": {"destination": {"type": "string"}, "date": {"type": "string"}},
                "required": ["destination"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "create_booking",
            "description": "Book a flight for a passenger",
            "parameters": {
                "type": "object",
                "properties": {
                    "flight": {"type": "object", "properties": {"id": {"type": "string"}}},
                    "passenger": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
                "required": ["flight"],
            },
        },
    },
]
if os.environ.get("AGENT_VISA"):  # a new version of the agent that also checks visas
    TOOLS.append(
        {
            "type": "function",
            "function": {
                "name": "check_visa",
                "description": "Check visa rules for a country",
                "parameters": {"type": "object", "properties": {"country": {"type": "string"}}},
            },
        }
    )
SYSTEM = "You are a travel assistant. Use the tools to search and book flights."
BUG = os.environ.get("AGENT_BUG", "")


RAW_REQUESTS = {
    # AGENT_BUG → one request sent outside the SDK once the booking is done: (method, path under
    # OPENAI_BASE_URL, body). The agent copes with the 4xx and exits 0, as careless agents do.
    "raw-not-json": ("POST", "/chat/completions", b"model=gpt-4o-mini&prompt=hello"),
    "raw-empty-body": ("POST", "/chat/completions", b""),
    "raw-embeddings": (
        "POST",
        "/embeddings",
        b'{"model": "text-embedding-3-small", "input": "hi"}',
    ),
    "raw-get": ("GET", "/chat/completions", None),
}


def send_raw(method, path, body):
    url = os.environ["OPENAI_BASE_URL"].rstrip("/") + path
    request = urllib.request.Request(
        url, data=body, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            print("raw request answered", reply.status)
    except urllib.error.HTTPError as exc:
        print("raw request refused with", exc.code, "- carrying on without it")


def search_flights(destination, date=None):
    # Volatile on purpose: the spec mocks this result so replays stay identical.
    return {"flights": [{"id": "KQ311", "dest": destination}], "searched_at": time.time()}


def check_visa(country):
    return {"visa_required": False, "country": country}


def create_booking(flight, passenger=None):
    booking = {"booking": "B-1042", "flight": flight["id"]}
    if BUG == "secret-in-tool-result":  # a tool that returns its connection settings
        booking["connection"] = {"password": os.environ["DB_PASSWORD"]}
    return booking


def echo(call):
    """The assistant message as the agent puts it back into the history."""
    arguments = call.function.arguments
    if BUG == "rewrite-flight-id" and call.function.name == "create_booking":
        parsed = json.loads(arguments)
        parsed["flight"]["id"] = "KQ999"
        arguments = json.dumps(parsed)
    if BUG == "rename-argument" and call.function.name == "search_flights":
        parsed = json.loads(arguments)  # a refactor renamed `destination` in the history
        parsed["location"] = parsed.pop("destination")
        arguments = json.dumps(parsed)
    if BUG == "lowercase-flight-id" and call.function.name == "create_booking":
        arguments = arguments.replace("KQ311", "kq311")  # a normaliser that now lowercases ids
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.function.name, "arguments": arguments},
    }


def write_pids(*pids):
    with open(os.environ["AGENT_PIDFILE"], "a") as handle:
        handle.write("".join(f"{pid}\n" for pid in pids))


def start_child_holding_stdout():
    """A helper that inherits the agent's stdout and outlives it (a log shipper, say)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid


def start_daemon():
    """The classic double fork: the grandchild is in a session of its own, its stdio on
    /dev/null, and its parent gone, so nothing but adoption ties it to the agent."""
    ready_read, ready_write = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.write(ready_write, f"{os.getpid()}\n".encode())
            time.sleep(600)
        os._exit(0)
    os.waitpid(middle, 0)
    os.close(ready_write)
    with os.fdopen(ready_read) as ready:
        return int(ready.readline())


def main():
    if BUG == "crash":
        raise RuntimeError("agent failed to load its configuration")
    if BUG == "long-line":  # a progress bar or a JSON blob: megabytes and no newline, then a crash
        sys.stderr.write("x" * (4 << 20) + " agent failed: the END")
        sys.stderr.flush()
        sys.exit(1)
    if BUG == "long-line-then-hang":
        sys.stdout.write("y" * (4 << 20))
        sys.stdout.flush()
        time.sleep(600)
    if BUG == "child-holds-stdout":
        write_pids(start_child_holding_stdout())
    if BUG == "daemon":
        write_pids(start_daemon())
    if BUG == "helpers":  # the agent, a helper child and a daemon: the whole tree to stop
        write_pids(os.getpid(), start_child_holding_stdout(), start_daemon())
    if BUG == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["AGENT_PIDFILE"], "w") as handle:
            handle.write(str(child.pid))
        time.sleep(600)
    if BUG == "no-model":
        print("Hello! (answered without a model)")
        return
    if BUG == "hardcoded-base-url":  # ignores OPENAI_BASE_URL: the commonest wiring bug
        client = OpenAI(base_url="http://127.0.0.1:9/v1", max_retries=0)
    else:
        client = OpenAI()
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    if BUG == "leak-secret":  # a careless agent that pastes its database password into the prompt
        messages[1]["content"] += f" (connect with password {os.environ['DB_PASSWORD']})"
    model = os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    while True:
        if os.environ.get("AGENT_STREAM"):
            # The SDK's streaming helper assembles the chunks (tool-call deltas included).
            with client.chat.completions.stream(
                model=model, messages=messages, tools=TOOLS, stream_options={"include_usage": True}
            ) as stream:
                reply = stream.get_final_completion()
        else:
            reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            break
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [echo(call) for call in message.tool_calls],
            }
        )
        for call in message.tool_calls:
            handler = {
                "search_flights": search_flights,
                "create_booking": create_booking,
                "check_visa": check_visa,
            }[call.function.name]
            try:
                result = handler(**json.loads(call.function.arguments))
            except RecursionError:  # a careful agent tells the model it cannot read them
                result = {"error": "the arguments are nested too deeply to read"}
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
            if BUG == "stop-after-first-tool":
                print("stopping early")
                return
    if BUG == "extra-call":
        messages.append({"role": "assistant", "content": message.content})
        messages.append({"role": "user", "content": "Summarise that in one line."})
        client.chat.completions.create(model=model, messages=messages)
    if BUG in RAW_REQUESTS:
        send_raw(*RAW_REQUESTS[BUG])
    print(message.content)
    if os.environ.get("AGENT_ECHO_SETTING"):
        print("setting:", os.environ.get("AGENT_SETTING"))


if __name__ == "__main__":
    main()

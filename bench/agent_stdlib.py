"""The peer comparison's agent: the bench's tool loop (bench/agent10.py) on the standard
library alone, so that `python3 -S` starts it in a few milliseconds and what the two engines
add is not hidden under an SDK's import. It reads its task from FLOWPROOF_PROMPT and its base
URL from OPENAI_BASE_URL, which both engines set; the model decides how many turns it takes."""

import json
import os
import urllib.request

from itinerary import SYSTEM, TOOLS, lookup  # bench/, the script's directory


def complete(base_url, key, messages):
    body = json.dumps({"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def main():
    base_url = os.environ["OPENAI_BASE_URL"]
    key = os.environ.get("OPENAI_API_KEY", "none")
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": os.environ["FLOWPROOF_PROMPT"]},
    ]
    while True:
        message = complete(base_url, key, messages)["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            print(message.get("content"))
            return
        messages.append(
            {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
        )
        for call in calls:
            result = lookup(**json.loads(call["function"]["arguments"]))
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )


if __name__ == "__main__":
    main()

"""The bench agents' one tool and their instructions, shared by the openai-SDK agent
(bench/agent10.py) and the standard-library one (bench/agent_stdlib.py), so both send the same
conversation. Standard library only: the stdlib agent runs under `python -S`."""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look up one step of the itinerary",
            "parameters": {
                "type": "object",
                "properties": {"step": {"type": "integer"}},
                "required": ["step"],
            },
        },
    }
]
SYSTEM = "You are a travel assistant. Use the lookup tool until the itinerary is complete."


def lookup(step):
    return {"step": step, "leg": f"NBO-{step:02d}", "ok": True}

"""The two tool schemas the small test agents offer (run as scripts, they import this from
their own directory)."""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "parameters": {"type": "object", "properties": {"destination": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "create_booking",
            "parameters": {"type": "object", "properties": {"flight": {"type": "object"}}},
        },
    },
]

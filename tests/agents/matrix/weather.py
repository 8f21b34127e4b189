"""The one tool the framework agents of the matrix offer, and its deterministic answer."""

import json

PROMPT_DEFAULT = "What is the weather in Nairobi?"


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return json.dumps({"city": city, "weather": "sunny", "celsius": 24})

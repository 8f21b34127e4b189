"""pydantic-ai (pip `pydantic-ai-slim[openai]`): an Agent on an OpenAI chat model with one tool.

The OpenAI provider reads OPENAI_BASE_URL and OPENAI_API_KEY.
"""

import os
import sys

from pydantic_ai import Agent

sys.path.insert(0, os.path.dirname(__file__))
from weather import PROMPT_DEFAULT, get_weather  # noqa: E402

agent = Agent(
    "openai-chat:gpt-4.1",
    instructions="Answer weather questions with the get_weather tool.",
    tools=[get_weather],
)
result = agent.run_sync(os.environ.get("FLOWPROOF_PROMPT", PROMPT_DEFAULT))
print(result.output)

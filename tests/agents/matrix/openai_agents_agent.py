"""openai-agents (pip `openai-agents`): one Agent with one function tool, run once.

The SDK reads OPENAI_BASE_URL and OPENAI_API_KEY itself; tracing is off through
OPENAI_AGENTS_DISABLE_TRACING (flowproof sets it unless the spec does).
"""

import os
import sys

from agents import Agent, Runner, function_tool

sys.path.insert(0, os.path.dirname(__file__))
from weather import PROMPT_DEFAULT, get_weather  # noqa: E402

agent = Agent(
    name="weather",
    instructions="Answer weather questions with the get_weather tool.",
    model="gpt-4.1",
    tools=[function_tool(get_weather)],
)
result = Runner.run_sync(agent, os.environ.get("FLOWPROOF_PROMPT", PROMPT_DEFAULT))
print(result.final_output)

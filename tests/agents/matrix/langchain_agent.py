"""LangChain (pip `langchain`, `langchain-openai`): `create_agent` over ChatOpenAI, one tool.

ChatOpenAI reads OPENAI_API_BASE before OPENAI_BASE_URL (flowproof sets both).
"""

import os
import sys

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

sys.path.insert(0, os.path.dirname(__file__))
from weather import PROMPT_DEFAULT, get_weather  # noqa: E402

agent = create_agent(
    ChatOpenAI(model="gpt-4.1", temperature=0),
    tools=[tool(get_weather)],
    system_prompt="Answer weather questions with the get_weather tool.",
)
state = agent.invoke(
    {"messages": [{"role": "user", "content": os.environ.get("FLOWPROOF_PROMPT", PROMPT_DEFAULT)}]}
)
print(state["messages"][-1].content)

"""A small booking agent built on the real openai-agents SDK, which speaks the Responses API.

Nothing here names a base URL: the SDK reads OPENAI_BASE_URL and OPENAI_API_KEY itself, so
the agent reaches flowproof's proxy exactly as it would reach api.openai.com. The task comes
from FLOWPROOF_PROMPT. Switches:

- AGENT_STREAM=1: Runner.run_streamed, draining every event (the request carries stream: true).
- AGENT_GUARDRAIL=1: an input guardrail backed by its own agent. The SDK runs it concurrently
  with the main agent's first call, so two model requests are in flight at once.
- AGENT_BUG=rewrite-flight-id: the booking tool books a different flight than the model asked
  for. The SDK echoes the model's function_call items verbatim, so the regression shows up
  where a real one would: in the tool output the next request carries.
- AGENT_BUG=extra-tool: the agent ships with one more tool than it was recorded with.
"""

import asyncio
import json
import os
import time

from agents import (
    Agent,
    GuardrailFunctionOutput,
    RunContextWrapper,
    Runner,
    TResponseInputItem,
    function_tool,
    input_guardrail,
)
from pydantic import BaseModel

INSTRUCTIONS = "You are a travel assistant. Use the tools to search and book flights."
GUARDRAIL_INSTRUCTIONS = "Decide whether the request is about travel."
BUG = os.environ.get("AGENT_BUG", "")


@function_tool
def search_flights(destination: str, date: str) -> str:
    """Find flights to a destination on a date."""
    # Volatile on purpose: the spec mocks this result so replays stay identical.
    return json.dumps({"flights": [{"id": "KQ311", "dest": destination}], "at": time.time()})


@function_tool
def create_booking(flight_id: str, passenger: str) -> str:
    """Book a flight for a passenger."""
    if BUG == "rewrite-flight-id":
        flight_id = "KQ999"  # the regression: a stale cache maps the flight to another id
    return json.dumps({"booking": "B-1042", "flight": flight_id, "passenger": passenger})


@function_tool
def cancel_booking(booking: str) -> str:
    """Cancel a booking."""
    return json.dumps({"cancelled": booking})


class TopicCheck(BaseModel):
    on_topic: bool


guardrail_agent = Agent(
    name="Topic check", instructions=GUARDRAIL_INSTRUCTIONS, output_type=TopicCheck
)


@input_guardrail
async def travel_only(
    context: RunContextWrapper[None], agent: Agent, prompt: str | list[TResponseInputItem]
) -> GuardrailFunctionOutput:
    checked = await Runner.run(guardrail_agent, prompt, context=context.context)
    verdict = checked.final_output_as(TopicCheck)
    return GuardrailFunctionOutput(output_info=verdict, tripwire_triggered=not verdict.on_topic)


def build_agent() -> Agent:
    tools = [search_flights, create_booking]
    if BUG == "extra-tool":
        tools.append(cancel_booking)
    guardrails = [travel_only] if os.environ.get("AGENT_GUARDRAIL") else []
    return Agent(
        name="Booking assistant",
        instructions=INSTRUCTIONS,
        tools=tools,
        input_guardrails=guardrails,
    )


async def run_streamed(agent: Agent, prompt: str) -> object:
    result = Runner.run_streamed(agent, prompt)
    async for _event in result.stream_events():
        pass
    return result.final_output


def main() -> None:
    agent = build_agent()
    prompt = os.environ["FLOWPROOF_PROMPT"]
    if os.environ.get("AGENT_STREAM"):
        final = asyncio.run(run_streamed(agent, prompt))
    else:
        final = Runner.run_sync(agent, prompt).final_output
    print(final)


if __name__ == "__main__":
    main()

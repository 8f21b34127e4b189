// OpenAI Agents SDK for TypeScript (npm `@openai/agents`): one Agent with one function tool,
// run once. Its OpenAI client reads OPENAI_BASE_URL and OPENAI_API_KEY and speaks /responses;
// tracing is off through OPENAI_AGENTS_DISABLE_TRACING (flowproof sets it unless the spec does).
import { Agent, run, tool } from "@openai/agents";
import { z } from "zod";

const getWeather = tool({
  name: "get_weather",
  description: "Get the current weather for a city.",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => JSON.stringify({ city, weather: "sunny", celsius: 24 }),
});
const agent = new Agent({
  name: "weather",
  instructions: "Answer weather questions with the get_weather tool.",
  model: "gpt-4.1",
  tools: [getWeather],
});
const result = await run(agent, process.env.FLOWPROOF_PROMPT ?? "What is the weather in Nairobi?");
console.log(result.finalOutput);

// Vercel AI SDK (npm `ai`, `@ai-sdk/openai`): generateText with one tool, up to three steps.
// The openai provider reads OPENAI_BASE_URL and OPENAI_API_KEY; `openai.chat()` speaks
// /chat/completions (the default `openai()` speaks /responses).
import { openai } from "@ai-sdk/openai";
import { generateText, stepCountIs, tool } from "ai";
import { z } from "zod";

const api = process.env.AGENT_API === "responses" ? openai.responses : openai.chat;
const result = await generateText({
  model: api("gpt-4.1"),
  system: "Answer weather questions with the get_weather tool.",
  prompt: process.env.FLOWPROOF_PROMPT ?? "What is the weather in Nairobi?",
  tools: {
    get_weather: tool({
      description: "Get the current weather for a city.",
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => ({ city, weather: "sunny", celsius: 24 }),
    }),
  },
  stopWhen: stepCountIs(3),
});
console.log(result.text);

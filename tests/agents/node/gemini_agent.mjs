// The booking agent of tests/agents/gemini_agent.py, on the npm `@google/genai` SDK: a
// generateContent tool loop with automatic function calling off.
//
// It reads its task from FLOWPROOF_PROMPT; `new GoogleGenAI({})` reads GOOGLE_API_KEY and
// GOOGLE_GEMINI_BASE_URL itself (and calls `/v1beta`, where the Python SDK calls `/v1`).
//   AGENT_STREAM=1               generateContentStream, the chunks' parts joined in order
//   AGENT_BUG=rewrite-flight-id  echo create_booking back into the history with flight.id KQ999
//   AGENT_PATHS_FILE             gets the path (and query) of every request the SDK made
import { appendFileSync } from 'node:fs';
import { GoogleGenAI } from '@google/genai';

const DECLARATIONS = [
  {
    name: 'search_flights',
    description: 'Find flights to a destination',
    parametersJsonSchema: {
      type: 'object',
      properties: { destination: { type: 'string' }, date: { type: 'string' } },
      required: ['destination'],
    },
  },
  {
    name: 'create_booking',
    description: 'Book a flight for a passenger',
    parametersJsonSchema: {
      type: 'object',
      properties: {
        flight: { type: 'object', properties: { id: { type: 'string' } } },
        passenger: { type: 'object', properties: { name: { type: 'string' } } },
      },
      required: ['flight'],
    },
  },
];
const CONFIG = {
  systemInstruction: 'You are a travel assistant. Use the tools to search and book flights.',
  tools: [{ functionDeclarations: DECLARATIONS }],
  automaticFunctionCalling: { disable: true },
};
const BUG = process.env.AGENT_BUG ?? '';

const HANDLERS = {
  // Volatile on purpose: the spec mocks this result so replays stay identical.
  search_flights: ({ destination }) => ({
    flights: [{ id: 'KQ311', dest: destination }],
    searched_at: Date.now() / 1000,
  }),
  create_booking: ({ flight }) => ({ booking: 'B-1042', flight: flight.id }),
};

if (process.env.AGENT_PATHS_FILE) {
  // The SDK calls the global fetch: note each URL's path before it goes out.
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input.url);
    appendFileSync(process.env.AGENT_PATHS_FILE, `${url.pathname}${url.search}\n`);
    return realFetch(input, init);
  };
}

/** One model turn as one Content, whichever transport is used. */
async function ask(ai, model, contents) {
  const params = { model, contents, config: CONFIG };
  if (process.env.AGENT_STREAM) {
    const parts = [];
    for await (const chunk of await ai.models.generateContentStream(params)) {
      parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
    }
    return { role: 'model', parts };
  }
  return (await ai.models.generateContent(params)).candidates[0].content;
}

/** The model's content as the agent puts it back into the history. */
function echo(content) {
  if (BUG !== 'rewrite-flight-id') return content;
  const parts = content.parts.map((part) =>
    part.functionCall?.name === 'create_booking'
      ? { ...part, functionCall: { ...part.functionCall, args: { ...part.functionCall.args, flight: { id: 'KQ999' } } } }
      : part,
  );
  return { ...content, parts };
}

const ai = new GoogleGenAI({});
const model = process.env.AGENT_MODEL ?? 'gemini-2.5-flash';
const contents = [{ role: 'user', parts: [{ text: process.env.FLOWPROOF_PROMPT }] }];
let answer;
for (;;) {
  answer = await ask(ai, model, contents);
  const calls = answer.parts.filter((part) => part.functionCall).map((part) => part.functionCall);
  if (calls.length === 0) break;
  contents.push(echo(answer));
  contents.push({
    role: 'user',
    parts: calls.map((call) => ({
      functionResponse: { name: call.name, response: HANDLERS[call.name](call.args) },
    })),
  });
}
console.log(answer.parts.map((part) => part.text ?? '').join(''));

// The booking agent of tests/agents/openai_chat_agent.py, on the npm `openai` SDK: a
// chat-completions tool loop with two tools.
//
// It reads its task from FLOWPROOF_PROMPT; `new OpenAI()` reads OPENAI_BASE_URL and
// OPENAI_API_KEY itself. AGENT_* variables pick the transport and switch on regressions:
//   AGENT_STREAM=1    stream through the SDK's helper, chat.completions.stream() + finalChatCompletion()
//   AGENT_STREAM=raw  stream with create({stream: true}) and assemble the tool-call deltas here
//   AGENT_BUG=rewrite-flight-id  echo create_booking back into the history with flight.id KQ999
//   AGENT_BUG=extra-call         ask the model once more after the final answer
//   AGENT_ENV_PROXY=1  honour HTTP_PROXY/HTTPS_PROXY/NO_PROXY the way Node agents behind a
//                      corporate proxy do: undici's EnvHttpProxyAgent as the client's fetch
//                      dispatcher (Node's own fetch ignores the variables before Node 24)
import OpenAI from 'openai';

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'search_flights',
      description: 'Find flights to a destination',
      parameters: {
        type: 'object',
        properties: { destination: { type: 'string' }, date: { type: 'string' } },
        required: ['destination'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'create_booking',
      description: 'Book a flight for a passenger',
      parameters: {
        type: 'object',
        properties: {
          flight: { type: 'object', properties: { id: { type: 'string' } } },
          passenger: { type: 'object', properties: { name: { type: 'string' } } },
        },
        required: ['flight'],
      },
    },
  },
];
const SYSTEM = 'You are a travel assistant. Use the tools to search and book flights.';
const BUG = process.env.AGENT_BUG ?? '';
const STREAM = process.env.AGENT_STREAM ?? '';

const HANDLERS = {
  // Volatile on purpose: the spec mocks this result so replays stay identical.
  search_flights: ({ destination }) => ({
    flights: [{ id: 'KQ311', dest: destination }],
    searched_at: Date.now() / 1000,
  }),
  create_booking: ({ flight }) => ({ booking: 'B-1042', flight: flight.id }),
};

/** The assistant's tool call as the agent puts it back into the history. */
function echo(call) {
  let args = call.function.arguments;
  if (BUG === 'rewrite-flight-id' && call.function.name === 'create_booking') {
    const parsed = JSON.parse(args);
    parsed.flight.id = 'KQ999';
    args = JSON.stringify(parsed);
  }
  return { id: call.id, type: 'function', function: { name: call.function.name, arguments: args } };
}

/** One model turn; returns the assistant message whichever transport is used. */
async function complete(client, params) {
  if (STREAM === 'raw') {
    return assemble(await client.chat.completions.create({ ...params, stream: true }));
  }
  if (STREAM) {
    const stream = client.chat.completions.stream({
      ...params,
      stream_options: { include_usage: true },
    });
    return (await stream.finalChatCompletion()).choices[0].message;
  }
  return (await client.chat.completions.create(params)).choices[0].message;
}

/** Rebuild the message from raw chunks: id, type and name arrive once per index, the
 * arguments in fragments. */
async function assemble(chunks) {
  const message = { role: 'assistant', content: null };
  const calls = [];
  for await (const chunk of chunks) {
    for (const choice of chunk.choices) {
      const { content, tool_calls: deltas } = choice.delta;
      if (typeof content === 'string') message.content = (message.content ?? '') + content;
      for (const d of deltas ?? []) {
        calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        const call = calls[d.index];
        if (d.id) call.id = d.id;
        if (d.type) call.type = d.type;
        if (d.function?.name) call.function.name += d.function.name;
        if (d.function?.arguments) call.function.arguments += d.function.arguments;
      }
    }
  }
  if (calls.length) message.tool_calls = calls;
  return message;
}

/** The SDK's client; with AGENT_ENV_PROXY, fetching through the environment's proxy. */
async function makeClient() {
  if (!process.env.AGENT_ENV_PROXY) return new OpenAI();
  const { EnvHttpProxyAgent, fetch } = await import('undici');
  const dispatcher = new EnvHttpProxyAgent();
  return new OpenAI({ fetch: (url, init) => fetch(url, { ...init, dispatcher }) });
}

async function main() {
  const client = await makeClient();
  const model = process.env.AGENT_MODEL ?? 'gpt-4o-mini';
  const messages = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: process.env.FLOWPROOF_PROMPT },
  ];
  let message;
  for (;;) {
    message = await complete(client, { model, messages, tools: TOOLS });
    if (!message.tool_calls?.length) break;
    messages.push({
      role: 'assistant',
      content: message.content,
      tool_calls: message.tool_calls.map(echo),
    });
    for (const call of message.tool_calls) {
      const result = HANDLERS[call.function.name](JSON.parse(call.function.arguments));
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
    }
  }
  if (BUG === 'extra-call') {
    messages.push({ role: 'assistant', content: message.content });
    messages.push({ role: 'user', content: 'Summarise that in one line.' });
    await client.chat.completions.create({ model, messages });
  }
  console.log(message.content);
}

await main();

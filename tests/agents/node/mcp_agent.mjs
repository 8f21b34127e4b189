// A test agent on npm @modelcontextprotocol/sdk that calls the MCP tools it is told to; no model.
// The Node twin of tests/agents/mcp_client_agent.py: same contract, same output.
//
//   node tests/agents/node/mcp_agent.mjs --server NAME [--parallel] [--calls JSON]
//
// The server is FLOWPROOF_MCP_SERVER_<NAME> (a POSIX-quoted stdio command line) or
// FLOWPROOF_MCP_URL_<NAME> (a streamable-HTTP URL); NAME upper-cased, non-alphanumerics as `_`.
// The task, a JSON list [{"name": ..., "arguments": {...}}], is --calls or FLOWPROOF_PROMPT.
// stdout: `NOTIFY log|progress <json>` per notification as it arrives, then one
// `RESULT <tool> <compact json>` per call in task order ({"content", "structuredContent" if
// any, "isError": true if so}). stderr: `ANSWERED <index> <tool>` as each answer arrives.
// It declares sampling (answered "sampled: <last message text>") and roots
// (file:///tmp/flowproof-roots). Exit 0 on success, 2 on a usage error, 1 if the session fails.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const ROOTS_URI = 'file:///tmp/flowproof-roots';
const SAMPLING_MODEL = 'flowproof-fixed-sampler';

function fail(message, code = 2) {
  process.stderr.write(`mcp_agent.mjs: ${message}\n`);
  process.exit(code);
}

/** POSIX shell word splitting, as Python's shlex.split does it (no expansions). */
export function shellSplit(line) {
  const words = [];
  let word = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) fail(`unterminated ' in command line: ${line}`);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      word = word ?? '';
      for (i++; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === '\\' && '"\\$`\n'.includes(line[i + 1] ?? '')) i++;
        word += line[i];
      }
      if (i >= line.length) fail(`unterminated " in command line: ${line}`);
    } else if (c === '\\') {
      i++;
      if (i < line.length && line[i] !== '\n') word = (word ?? '') + line[i];
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

function parseArgs(argv) {
  const args = { parallel: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--parallel') args.parallel = true;
    else if (a === '--server' || a === '--calls') {
      if (i + 1 >= argv.length) fail(`${a} needs a value`);
      args[a.slice(2)] = argv[++i];
    } else fail(`unknown argument ${a}`);
  }
  if (!args.server) fail('--server NAME is required');
  return args;
}

function transportFor(server) {
  const name = server.replace(/[^A-Za-z0-9]/g, '_').toUpperCase();
  const command = process.env[`FLOWPROOF_MCP_SERVER_${name}`];
  const url = process.env[`FLOWPROOF_MCP_URL_${name}`];
  if (command && url) fail(`both FLOWPROOF_MCP_SERVER_${name} and FLOWPROOF_MCP_URL_${name} are set`);
  if (url) return new StreamableHTTPClientTransport(new URL(url));
  if (command) {
    const [program, ...rest] = shellSplit(command);
    if (!program) fail(`FLOWPROOF_MCP_SERVER_${name} is empty`);
    return new StdioClientTransport({ command: program, args: rest, stderr: 'inherit' });
  }
  fail(`neither FLOWPROOF_MCP_SERVER_${name} nor FLOWPROOF_MCP_URL_${name} is set`);
}

function parseCalls(raw) {
  if (raw === undefined) fail('no task: pass --calls JSON or set FLOWPROOF_PROMPT');
  let calls;
  try {
    calls = JSON.parse(raw);
  } catch (error) {
    fail(`the task is not JSON (${error.message}): ${raw}`);
  }
  if (!Array.isArray(calls) || !calls.every((c) => c && typeof c.name === 'string')) {
    fail(`the task must be a JSON list of {"name": ..., "arguments": {...}}: ${raw}`);
  }
  return calls;
}

function render(result) {
  const shown = { content: result.content ?? [] };
  if (result.structuredContent !== undefined) shown.structuredContent = result.structuredContent;
  if (result.isError) shown.isError = true;
  return JSON.stringify(shown);
}

const args = parseArgs(process.argv.slice(2));
const transport = transportFor(args.server);
const calls = parseCalls(args.calls ?? process.env.FLOWPROOF_PROMPT);

const client = new Client(
  { name: 'flowproof-node-mcp-agent', version: '1.0.0' },
  { capabilities: { sampling: {}, roots: { listChanged: false } } },
);
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  const messages = request.params.messages ?? [];
  const last = messages.length ? messages[messages.length - 1].content : null;
  const said = last && last.type === 'text' ? last.text : '(no text)';
  return {
    role: 'assistant',
    content: { type: 'text', text: `sampled: ${said}` },
    model: SAMPLING_MODEL,
    stopReason: 'endTurn',
  };
});
client.setRequestHandler(ListRootsRequestSchema, async () => ({
  roots: [{ uri: ROOTS_URI, name: 'flowproof-roots' }],
}));
// The SDK reports protocol trouble it does not throw (a progress notification for a finished
// request, say) through onerror; show it rather than lose it.
// (close() aborts the HTTP GET stream and reports that too: noise, so it is not shown.)
let closing = false;
client.onerror = (error) => {
  if (!closing) process.stderr.write(`MCP-ERROR ${error?.message ?? error}\n`);
};
client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
  console.log(`NOTIFY log ${JSON.stringify(notification.params)}`);
});

async function one(index, call) {
  const onprogress = (p) => {
    const shown = { call: index, progress: p.progress, total: p.total ?? null, message: p.message ?? null };
    console.log(`NOTIFY progress ${JSON.stringify(shown)}`);
  };
  const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, {
    onprogress,
  });
  process.stderr.write(`ANSWERED ${index} ${call.name}\n`);
  return render(result);
}

let lines;
try {
  await client.connect(transport);
  process.stderr.write(`server ${JSON.stringify(client.getServerVersion())}\n`);
  if (args.parallel) {
    lines = await Promise.all(calls.map((c, i) => one(i, c)));
  } else {
    lines = [];
    for (const [i, c] of calls.entries()) lines.push(await one(i, c));
  }
} catch (error) {
  closing = true;
  await client.close().catch(() => {});
  fail(`MCP session with '${args.server}' failed: ${error?.message ?? error}`, 1);
}
closing = true;
await client.close();
calls.forEach((c, i) => console.log(`RESULT ${c.name} ${lines[i]}`));

// Start @modelcontextprotocol/server-everything with every listening socket on 127.0.0.1.
//
//   node tests/agents/node/everything.mjs stdio
//   node tests/agents/node/everything.mjs streamableHttp PORT   (serves http://127.0.0.1:PORT/mcp)
//
// server-everything's HTTP mode reads PORT from the environment and listens on all interfaces;
// an MCP SDK strips a stdio server's environment anyway, so the port comes from argv here and
// net.Server.prototype.listen is patched, before the server loads, to bind loopback only.
import net from 'node:net';

const [mode = 'stdio', port] = process.argv.slice(2);
if (!['stdio', 'streamableHttp'].includes(mode) || (mode === 'streamableHttp') !== Boolean(port)) {
  console.error('usage: everything.mjs stdio | everything.mjs streamableHttp PORT');
  process.exit(2);
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callback = args.find((a) => typeof a === 'function');
  const first = args[0];
  let options;
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    options = { port: Number(first) };
  } else if (first && typeof first === 'object' && !(first instanceof net.Server) && 'port' in first) {
    options = { ...first };
  } else {
    return listen.apply(this, args); // a pipe path or handle: nothing to rebind
  }
  options.host = '127.0.0.1';
  return callback ? listen.call(this, options, callback) : listen.call(this, options);
};

if (mode === 'streamableHttp') process.env.PORT = port;
process.argv = [process.argv[0], 'mcp-server-everything', mode];
await import('@modelcontextprotocol/server-everything/dist/index.js');

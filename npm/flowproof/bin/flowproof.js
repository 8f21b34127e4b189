#!/usr/bin/env node
'use strict';
// The `flowproof` command npm installs: finds the engine (FLOWPROOF_BIN, else this platform's
// @flowproof/cli-* package), starts it, forwards signals and passes its exit status through.
// Everything the launcher says goes to stderr; stdout belongs to the engine.

const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const platform = require('../lib/platform.js');

const USAGE_ERROR = 2; // the engine's own code for a usage or configuration error
const FORWARDED = process.platform === 'win32'
  ? ['SIGTERM', 'SIGHUP'] // Ctrl-C reaches every process on the console already
  : ['SIGINT', 'SIGTERM', 'SIGHUP'];

class LaunchError extends Error {}

function say(line) {
  process.stderr.write(`flowproof: ${line}\n`);
}

/** A non-empty FLOWPROOF_BIN, checked; never a fallback to the package when it is wrong. */
function fromOverride(value) {
  say(`using FLOWPROOF_BIN=${value}`);
  let stat;
  try {
    stat = fs.statSync(value);
  } catch {
    throw new LaunchError(`FLOWPROOF_BIN does not exist: ${value}`);
  }
  if (stat.isDirectory()) {
    throw new LaunchError(`FLOWPROOF_BIN is a directory, not the engine executable: ${value}`);
  }
  try {
    fs.accessSync(value, fs.constants.X_OK);
  } catch {
    throw new LaunchError(`FLOWPROOF_BIN is not executable: ${value} (chmod +x it, or unset FLOWPROOF_BIN)`);
  }
  return value;
}

function ownVersion() {
  return require('../package.json').version;
}

function installedPackage(name) {
  try {
    return require.resolve(`${name}/package.json`);
  } catch {
    return null;
  }
}

function missingPackage(key, name) {
  const others = platform.TARGETS
    .map(platform.packageName)
    .filter((other) => other !== name && installedPackage(other));
  const lines = [`the flowproof engine for this platform (${key}) is not installed: ${name} is missing.`];
  if (others.length > 0) {
    lines.push(
      `node_modules holds ${others.join(', ')}, built for another platform: it was installed on another`,
      'machine or OS (a node_modules copied into a Docker image, shared with WSL, installed under Rosetta).',
      'Fix: reinstall on this machine (`rm -rf node_modules && npm install`), or prepare it for this platform',
      'with `npm install --os=<os> --cpu=<cpu> --libc=<glibc|musl>`.',
    );
  } else {
    lines.push(
      'npm installs it as an optional dependency of flowproof, so it is left out when optional dependencies',
      'are omitted (`npm install --omit=optional`, `npm ci --omit=optional`, `--no-optional`, `omit=optional`',
      'in .npmrc, `yarn --ignore-optional`), or when package-lock.json was written without this platform\'s',
      'entry (https://github.com/npm/cli/issues/4828).',
      `Fix: reinstall without --omit=optional, or \`npm install ${name}@${ownVersion()}\`;`,
      'or point FLOWPROOF_BIN at a flowproof engine.',
    );
  }
  return new LaunchError(lines.join('\nflowproof: '));
}

/** This platform's engine inside its @flowproof/cli-* package. */
function fromPackage() {
  const unsupported = platform.unsupportedReason(process.platform, platform.detectLibc());
  if (unsupported) throw new LaunchError(unsupported);
  const key = platform.currentKey();
  const target = platform.targetFor(key);
  if (!target) {
    const supported = platform.TARGETS.map((t) => t.key).join(', ');
    throw new LaunchError(
      `no flowproof engine is published for this platform (${key}); supported: ${supported}.\n`
      + 'flowproof: set FLOWPROOF_BIN to an engine built for it, or use the install script.',
    );
  }
  const name = platform.packageName(target);
  const manifest = installedPackage(name);
  if (!manifest) throw missingPackage(key, name);
  const found = JSON.parse(fs.readFileSync(manifest, 'utf8')).version;
  if (found !== ownVersion()) {
    throw new LaunchError(
      `mixed versions: flowproof ${ownVersion()} found ${name} ${found}; `
      + `reinstall so both are ${ownVersion()} (\`npm install flowproof@${ownVersion()}\`).`,
    );
  }
  const engine = path.join(path.dirname(manifest), platform.executablePath(target));
  if (!fs.existsSync(engine)) {
    throw new LaunchError(`${name} is incomplete: ${engine} does not exist; reinstall it.`);
  }
  return engine;
}

function resolveEngine() {
  const override = process.env.FLOWPROOF_BIN;
  // An empty FLOWPROOF_BIN (a CI template that expanded to nothing) counts as unset.
  return override ? fromOverride(override) : fromPackage();
}

/** The launcher's exit code for the engine's end: its code, or 128+N after a death by signal N.
 * Never 0 for a signal: an OOM kill must not look like a pass. */
function exitCodeOf(code, signal) {
  if (signal) return 128 + (os.constants.signals[signal] || 0);
  return code === null ? 1 : code;
}

function run(engine) {
  let child = null;
  const forward = (signal) => {
    try {
      child.kill(signal);
    } catch {
      // the engine is already gone; its exit event decides the code
    }
  };
  const stopForwarding = () => {
    for (const signal of FORWARDED) process.off(signal, forward);
  };
  // Before the spawn: a signal that arrives once the engine is running (on a loaded machine,
  // before this process got back from spawn) must be forwarded, not kill the launcher. A
  // handler runs from the event loop, so it never sees `child` unset.
  for (const signal of FORWARDED) process.on(signal, forward);
  // Async spawn: with spawnSync a SIGTERM to the launcher would orphan the engine.
  child = spawn(engine, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });
  let failed = false;
  child.on('error', (error) => {
    // ENOENT, EACCES, ENOEXEC...; 'exit' may or may not follow, and must not overwrite this
    failed = true;
    stopForwarding();
    say(`cannot start ${engine}: ${error.message}`);
    process.exitCode = USAGE_ERROR;
  });
  child.on('exit', (code, signal) => {
    stopForwarding();
    if (!failed) process.exitCode = exitCodeOf(code, signal);
  });
}

function main() {
  let engine;
  try {
    engine = resolveEngine();
  } catch (error) {
    if (!(error instanceof LaunchError)) throw error;
    say(error.message);
    process.exitCode = USAGE_ERROR;
    return;
  }
  run(engine);
}

main();

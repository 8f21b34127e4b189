#!/usr/bin/env node
// Packs the npm tarballs for THIS platform from a PyInstaller onedir build:
//
//   node npm/scripts/pack.mjs --bundle dist/flowproof --out dist/npm [--version X.Y.Z]
//
// writes <out>/flowproof-<version>.tgz (the launcher, identical on every platform) and
// <out>/flowproof-cli-<key>-<version>.tgz (@flowproof/cli-<key>, the engine for this machine),
// and prints their paths on stdout. The version defaults to flowproof/_version.py's __version__.
// Both manifests are generated here, from npm/flowproof/lib/platform.js's target table.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const platform = require('../flowproof/lib/platform.js');

const NPM_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.dirname(NPM_DIR);
const LAUNCHER_SOURCES = path.join(NPM_DIR, 'flowproof');
const DESCRIPTION = 'Deterministic CI tests for AI agents: record model traffic once, replay it forever.';
const LICENSE = 'Apache-2.0';
// npm packs a LICENSE at the package root whatever `files` says
const LICENSE_FILE = path.join(REPO, 'LICENSE');
const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

class PackError extends Error {}

function log(line) {
  process.stderr.write(`pack: ${line}\n`);
}

function readVersion() {
  const init = path.join(REPO, 'flowproof', '_version.py');
  const match = fs.readFileSync(init, 'utf8').match(/^__version__\s*=\s*["']([^"']+)["']/m);
  if (!match) throw new PackError(`no __version__ = "..." line in ${init}; pass --version`);
  return match[1];
}

function launcherManifest(version) {
  const optional = Object.fromEntries(
    platform.TARGETS.map((target) => [platform.packageName(target), version]),
  );
  return {
    name: 'flowproof',
    version,
    description: DESCRIPTION,
    license: LICENSE,
    bin: { flowproof: 'bin/flowproof.js' },
    files: ['bin/', 'lib/'],
    engines: { node: '>=18' },
    optionalDependencies: optional, // exact versions: the launcher refuses a mixed pair anyway
  };
}

function platformManifest(target, version) {
  const manifest = {
    name: platform.packageName(target),
    version,
    description: `The flowproof engine for ${target.key}. Install \`flowproof\`, which picks this package.`,
    license: LICENSE,
    os: [target.os],
    cpu: [target.cpu],
  };
  // every Linux package declares its libc, or npm would install the gnu and musl twins together
  if (target.libc) manifest.libc = [target.libc];
  return {
    ...manifest,
    files: ['flowproof/'],
    preferUnplugged: true, // Yarn PnP must unpack the onedir folder to run it
    publishConfig: { access: 'public' },
  };
}

function platformReadme(target, version) {
  return [
    `# ${platform.packageName(target)}`,
    '',
    `The flowproof ${version} engine (a PyInstaller onedir build) for \`${target.key}\`.`,
    '',
    'Do not install this package directly: install [`flowproof`](https://www.npmjs.com/package/flowproof),',
    'whose launcher picks the engine package for your platform (`npx flowproof run specs/`).',
    '',
  ].join('\n');
}

/** Every path under `root`, relative, with '/' separators; refuses what npm pack would lose. */
function bundleFiles(root) {
  const files = [];
  const links = [];
  const strange = [];
  const walk = (relative) => {
    for (const entry of fs.readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink()) links.push(`${child} -> ${fs.readlinkSync(path.join(root, child))}`);
      else if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) files.push(child);
      else strange.push(child);
    }
  };
  walk('');
  if (links.length > 0) {
    throw new PackError(
      `${root} holds ${links.length} symlink(s), which npm pack silently drops `
      + '(https://github.com/npm/cli/issues/6744), so the installed engine would break:\n  '
      + `${links.join('\n  ')}\nReplace each with a copy of its target in the build, then pack again.`,
    );
  }
  if (strange.length > 0) {
    throw new PackError(`${root} holds entries that are neither files nor folders:\n  ${strange.join('\n  ')}`);
  }
  return files;
}

function checkBundle(bundle, target) {
  if (!fs.statSync(bundle, { throwIfNoEntry: false })?.isDirectory()) {
    throw new PackError(`--bundle ${bundle} is not a folder; build the onedir engine first`);
  }
  const executable = path.basename(platform.executablePath(target));
  const engine = path.join(bundle, executable);
  const stat = fs.statSync(engine, { throwIfNoEntry: false });
  if (!stat?.isFile()) throw new PackError(`${bundle} has no ${executable}: is it a flowproof onedir build?`);
  if (target.os !== 'win32' && (stat.mode & 0o111) === 0) {
    throw new PackError(`${engine} is not executable`);
  }
  return bundleFiles(bundle);
}

/** npm pack `directory` into `out`; returns npm's report of the tarball (name, files, modes). */
function npmPack(directory, out) {
  // npm is npm.cmd on Windows, which Node starts only through a shell (CVE-2024-27980)
  const windows = process.platform === 'win32';
  const args = ['pack', '--json', '--ignore-scripts', '--pack-destination', out];
  const done = spawnSync(
    'npm',
    windows ? args.map((arg) => `"${arg}"`) : args,
    { cwd: directory, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], shell: windows },
  );
  if (done.error) throw new PackError(`cannot run npm pack: ${done.error.message}`);
  if (done.status !== 0) throw new PackError(`npm pack failed in ${directory} (exit ${done.status})`);
  const [report] = JSON.parse(done.stdout);
  return report;
}

/** What npm pack left out despite `files` (its always-ignored names, .gitignore, ...). */
function checkPacked(report, expected) {
  const packed = new Set(report.files.map((file) => file.path));
  const lost = expected.filter((file) => !packed.has(file));
  if (lost.length > 0) {
    throw new PackError(`npm pack left ${lost.length} file(s) of the bundle out of ${report.filename}:\n  ${lost.join('\n  ')}`);
  }
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function stageLauncher(stage, version) {
  fs.cpSync(path.join(LAUNCHER_SOURCES, 'bin'), path.join(stage, 'bin'), { recursive: true });
  fs.cpSync(path.join(LAUNCHER_SOURCES, 'lib'), path.join(stage, 'lib'), { recursive: true });
  fs.copyFileSync(path.join(NPM_DIR, 'README.md'), path.join(stage, 'README.md'));
  fs.copyFileSync(LICENSE_FILE, path.join(stage, 'LICENSE'));
  writeJson(path.join(stage, 'package.json'), launcherManifest(version));
}

function stagePlatform(stage, target, version, bundle) {
  fs.cpSync(bundle, path.join(stage, 'flowproof'), { recursive: true });
  fs.writeFileSync(path.join(stage, 'README.md'), platformReadme(target, version));
  fs.copyFileSync(LICENSE_FILE, path.join(stage, 'LICENSE'));
  writeJson(path.join(stage, 'package.json'), platformManifest(target, version));
}

function pack({ bundle, out, version }) {
  if (!SEMVER.test(version)) {
    throw new PackError(`version ${JSON.stringify(version)} is not semver (npm needs X.Y.Z[-pre]); pass --version`);
  }
  const key = platform.currentKey();
  const target = platform.targetFor(key);
  if (!target) {
    throw new PackError(`no engine package is defined for this platform (${key}); add it to npm/flowproof/lib/platform.js`);
  }
  const files = checkBundle(bundle, target).map((file) => `flowproof/${file}`);
  fs.mkdirSync(out, { recursive: true });
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'flowproof-npm-pack-'));
  try {
    const launcher = path.join(staging, 'launcher');
    const engine = path.join(staging, 'engine');
    stageLauncher(launcher, version);
    stagePlatform(engine, target, version, bundle);
    log(`packing flowproof ${version} and ${platform.packageName(target)} (${files.length} bundle files)`);
    const launcherReport = npmPack(launcher, out);
    const engineReport = npmPack(engine, out);
    checkPacked(engineReport, files);
    return [launcherReport.filename, engineReport.filename];
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

function main() {
  const { values } = parseArgs({
    options: {
      bundle: { type: 'string' },
      out: { type: 'string' },
      version: { type: 'string' },
    },
  });
  if (!values.bundle || !values.out) {
    throw new PackError('usage: node npm/scripts/pack.mjs --bundle <onedir folder> --out <folder> [--version X.Y.Z]');
  }
  const tarballs = pack({
    bundle: path.resolve(values.bundle),
    out: path.resolve(values.out),
    version: values.version ?? readVersion(),
  });
  for (const tarball of tarballs) process.stdout.write(`${path.join(values.out, tarball)}\n`);
}

try {
  main();
} catch (error) {
  if (!(error instanceof PackError) && error.code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw error;
  process.stderr.write(`pack: ${error.message}\n`);
  process.exitCode = 2;
}

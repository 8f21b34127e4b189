'use strict';
// The one place that spells a platform key (`linux-x64-gnu`, `darwin-arm64`, ...).
// The launcher uses it to find this machine's engine package; npm/scripts/pack.mjs uses it to
// name the package it builds and to fill the `os`, `cpu` and `libc` fields npm installs by.

const fs = require('fs');

/** Every target an engine package is published for: the builds .github/workflows/release.yml
 * makes (a test checks the two lists agree). `libc` uses npm's values (glibc | musl); the key
 * uses the short -gnu / -musl suffix, on Linux only. */
const TARGETS = [
  { key: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc' },
  { key: 'linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc' },
  { key: 'darwin-arm64', os: 'darwin', cpu: 'arm64', libc: null },
  { key: 'darwin-x64', os: 'darwin', cpu: 'x64', libc: null },
];

/** Why no engine exists for a whole platform, and what to do instead; null when one may. */
function unsupportedReason(os, libc) {
  if (os === 'win32') {
    // The engine starts agents through /bin/sh and process groups, which Windows lacks.
    return 'Windows is not supported yet; run flowproof in WSL (Windows Subsystem for Linux), '
      + 'where `npm install flowproof` installs the Linux engine.';
  }
  if (os === 'linux' && libc === 'musl') {
    return 'musl-based Linux (Alpine) is not supported: the engine is built against glibc. '
      + 'Use a glibc-based image (Debian, Ubuntu, e.g. node:24-slim), or the Python package.';
  }
  return null;
}

const SCOPE = '@flowproof';
const LIBC_SUFFIX = { glibc: 'gnu', musl: 'musl' };

/** The libc that /usr/bin/ldd's text names, or null. This is npm's own test (0.5 ms); the mere
 * presence of /lib/ld-musl-* proves nothing, since glibc systems can carry the musl package. */
function libcFromLdd(text) {
  if (text.includes('musl')) return 'musl';
  if (text.includes('GNU C Library') || text.includes('GLIBC')) return 'glibc';
  return null;
}

/** glibc | musl on Linux (null when neither can be told), null elsewhere. */
function detectLibc(platform = process.platform) {
  if (platform !== 'linux') return null;
  try {
    const found = libcFromLdd(fs.readFileSync('/usr/bin/ldd', 'latin1'));
    if (found) return found;
  } catch {
    // no readable ldd (distroless images): ask Node itself below
  }
  try {
    // excludeNetwork: without it getReport() may block on a reverse DNS lookup
    process.report.excludeNetwork = true;
    const header = process.report.getReport().header;
    return header.glibcVersionRuntime ? 'glibc' : 'musl';
  } catch {
    return null;
  }
}

function keyFor(os, cpu, libc) {
  if (os !== 'linux') return `${os}-${cpu}`;
  return libc ? `${os}-${cpu}-${LIBC_SUFFIX[libc]}` : `${os}-${cpu}-<unknown libc>`;
}

/** This machine's key, whether or not an engine is published for it. */
function currentKey() {
  return keyFor(process.platform, process.arch, detectLibc());
}

/** The target for `key`, or undefined when no engine is published for it. */
function targetFor(key) {
  return TARGETS.find((target) => target.key === key);
}

function packageName(target) {
  return `${SCOPE}/cli-${target.key}`;
}

/** The engine's path inside its package: the PyInstaller onedir folder `flowproof/`. */
function executablePath(target) {
  return target.os === 'win32' ? 'flowproof/flowproof.exe' : 'flowproof/flowproof';
}

module.exports = {
  TARGETS,
  unsupportedReason,
  libcFromLdd,
  detectLibc,
  currentKey,
  targetFor,
  packageName,
  executablePath,
};

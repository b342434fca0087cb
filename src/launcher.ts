#!/usr/bin/env node
import { isAscii } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { debuglog } from 'node:util';
import vm from 'node:vm';
import { makeDirectories } from './core/directories.js';

/**
 * The command (`dist/main.js`, what `bin` and `npm start` run): loads the command line and server,
 * bundled as `dist/sandbox.cjs`, through V8's code cache. Compiling the bundle is a fifth of a start
 * (60 to 80 ms of CPU), while Node 20 has no compile cache of its own (`module.enableCompileCache()`
 * is Node 22.1+, and covers no code compiled through `vm`).
 *
 * A cache holds for one folder. V8 keeps the name a script was compiled under in the code it caches,
 * and code read from a cache reports that name in its stack traces whatever `filename` it is given
 * now (nodejs/node#38134): a cache made in one folder and read in another names the first. So, as
 * Node's own compile cache does, caches are named by where the bundle is, besides its content and
 * the Node version (and V8 refuses one made under other V8 flags). The build keeps one in
 * `dist/code-cache/` for the folder it built, which is where a checkout and the Docker image run it
 * (scripts/build.mjs); a start anywhere else, such as an installed package (which ships none), makes
 * its own in a per-user temporary folder once it is ready, and every later start there reads it. Any
 * problem with a cache only costs the compile it would have saved.
 *
 * `NODE_DEBUG=shipping-sandbox` says which cache was used; `SANDBOX_CODE_CACHE=off` compiles without
 * one and keeps none.
 */

/** The bundle's content hash, set by the build: caches are named by it and by the Node version. */
declare const SANDBOX_BUNDLE_HASH: string;

/** Emitted on `process` by the command line once the server is listening (src/main.ts). */
const READY_EVENT = 'shipping-sandbox:ready';

const debug = debuglog('shipping-sandbox');
const here = dirname(fileURLToPath(import.meta.url));
const bundle = join(here, 'sandbox.cjs');
const bytes = readFileSync(bundle);
// The build writes the bundle in ASCII: read so, it decodes ten times faster than UTF-8 and V8 keeps
// it as one-byte text.
const source = bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
const where = createHash('sha256').update(bundle).digest('hex').slice(0, 8);
const cacheName = `${SANDBOX_BUNDLE_HASH}-${process.version}-${process.arch}-${where}`;
const builtCache = join(here, 'code-cache', `${cacheName}.bin`);
// V8 refuses a cache made under other flags: a start's own cache is named by its flags too, so that a
// start with other flags (`--max-old-space-size`, say) never displaces the build's for the others.
const flags = createHash('sha256')
  .update(JSON.stringify([process.execArgv, process.env.NODE_OPTIONS ?? '']))
  .digest('hex')
  .slice(0, 8);
const ownCache = join(
  tmpdir(),
  `shipping-sandbox-code-cache-${process.getuid?.() ?? 'user'}`,
  `${cacheName}-${flags}.bin`,
);

const off = process.env.SANDBOX_CODE_CACHE === 'off';
/** Set by the build only: write the build's cache once the sandbox is ready, then exit. */
const buildsTheCache = process.env.SANDBOX_CODE_CACHE_WRITE === '1';

function read(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

// A cache of its own exists only where the build's was missing or refused for these flags.
const found = off || buildsTheCache ? undefined : (read(ownCache) ?? read(builtCache));
const script = new vm.Script(
  // The CommonJS module wrapper, on the bundle's first line so that its line numbers stay the same.
  `(function (exports, require, module, __filename, __dirname) {${source.replace(/^#!.*/, '')}\n})`,
  {
    filename: bundle,
    // No `importModuleDynamically`: the bundle loads its lazy parts with `require`.
    ...(found ? { cachedData: found } : {}),
  },
);
const accepted = found !== undefined && !script.cachedDataRejected;
debug(
  off
    ? 'code cache off'
    : found === undefined
      ? `no code cache for ${cacheName}-${flags}`
      : `code cache ${accepted ? 'accepted' : 'rejected'} (${found.length} bytes)`,
);

if (buildsTheCache) {
  process.once(READY_EVENT, () => {
    write(builtCache);
    process.exit(0);
  });
} else if (!off && !accepted) {
  // Made once the server is ready, so that it holds what starting compiled, not only the top level.
  process.once(READY_EVENT, () => setImmediate(() => write(ownCache)));
}

function write(path: string): void {
  try {
    // Not Node's recursive mkdir, which spins for ever under a TMPDIR that takes no directories.
    makeDirectories(dirname(path));
    // Through a temporary name: another process starting meanwhile never reads half a file.
    const temporary = `${path}.${process.pid}`;
    writeFileSync(temporary, script.createCachedData());
    renameSync(temporary, path);
    debug(`code cache written to ${path}`);
  } catch (error) {
    // A read-only folder only means the next start compiles again.
    debug(`code cache not written: ${(error as Error).message}`);
  }
}

const module = { exports: {} };
const run = script.runInThisContext() as (
  exports: object,
  require: NodeJS.Require,
  module: object,
  filename: string,
  dirname: string,
) => void;
run(module.exports, createRequire(bundle), module, bundle, dirname(bundle));

#!/usr/bin/env node
import { isAscii } from 'node:buffer';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { debuglog } from 'node:util';
import vm from 'node:vm';

/**
 * The command (`dist/main.js`, what `bin` and `npm start` run): loads the command line and server,
 * bundled as `dist/sandbox.cjs`, through V8's code cache. Compiling the bundle is a fifth of a start
 * (60 to 80 ms of CPU), and a CI runner or a new container starts with nothing kept, while Node 20
 * has no compile cache of its own (`module.enableCompileCache()` is Node 22.1+, and covers no code
 * compiled through `vm`). So the build starts the sandbox once and keeps the compiled code in
 * `dist/code-cache/`, made with the build's Node version (scripts/build.mjs); under another version
 * (or V8 flags) the first start makes a cache of its own in a per-user temporary folder, once it is
 * ready. Any problem with a cache only costs the compile it would have saved.
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
const cacheName = `${SANDBOX_BUNDLE_HASH}-${process.version}-${process.arch}`;
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
/** Set by the build only: write the cache here once the sandbox is ready, then exit. */
const buildTarget = process.env.SANDBOX_CODE_CACHE_WRITE;

function read(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

// A cache of its own exists only where the build's was missing or refused for these flags.
const found = off || buildTarget ? undefined : (read(ownCache) ?? read(builtCache));
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

if (buildTarget !== undefined) {
  process.once(READY_EVENT, () => {
    write(buildTarget);
    process.exit(0);
  });
} else if (!off && !accepted) {
  // Made once the server is ready, so that it holds what starting compiled, not only the top level.
  process.once(READY_EVENT, () => setImmediate(() => write(ownCache)));
}

function write(path: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
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

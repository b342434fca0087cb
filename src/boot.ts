#!/usr/bin/env node
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

/**
 * The launcher (`dist/main.js`): loads the bundled sandbox (`dist/sandbox.cjs`) through V8's code
 * cache. CI starts the sandbox once per job, and compiling the bundle is a third of its start-up;
 * with the cache V8 reads compiled code instead. The cache is keyed by the bundle's bytes and Node's
 * version, lives in a per-user temporary folder, and is made on the first start after a build. Any
 * problem with it only costs the compile it would have saved.
 */
const bundle = join(dirname(fileURLToPath(import.meta.url)), 'sandbox.cjs');
const source = readFileSync(bundle, 'utf8');
const key = createHash('sha256').update(source).update(process.version).digest('hex').slice(0, 24);
const cacheDir = join(tmpdir(), `shipping-sandbox-v8-${process.getuid?.() ?? 'user'}`);
const cacheFile = join(cacheDir, `${key}.bin`);

let cachedData: Buffer | undefined;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  cachedData = undefined;
}

const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: bundle,
  // No `importModuleDynamically`: the bundle loads its lazy parts with `require`, and a script
  // compiled from cached data would lose that option anyway.
  cachedData,
});

if (cachedData === undefined || script.cachedDataRejected) {
  // Made right after the bundle's own start-up code has run, so it holds what that compiled too.
  setImmediate(() => {
    try {
      mkdirSync(cacheDir, { recursive: true });
      const temporary = `${cacheFile}.${process.pid}`;
      writeFileSync(temporary, script.createCachedData());
      renameSync(temporary, cacheFile);
    } catch {
      // A read-only temporary folder only means the next start compiles again.
    }
  });
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

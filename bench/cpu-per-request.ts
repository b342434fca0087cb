/**
 * The sandbox's CPU time a request, for comparing builds or node flags on a busy machine, where
 * requests a second swing with whatever else runs: `npx tsx bench/cpu-per-request.ts [options]`,
 * after `npm run build`. Each configuration is a sandbox of its own, started in turn, round after
 * round (ABAB…), so that drift hits them all; each runs the same requests and the figure is the
 * server's CPU (user + system, /proc) over the requests it answered, the median of the rounds.
 *
 *   --config "<node flags>"   a configuration (repeatable; "" is the benchmark's node flags,
 *                             SANDBOX_NODE_FLAGS, which a configuration's own follow); a first word
 *                             naming a folder (`/tmp/base/dist`) runs that build's main.js
 *   --rounds <n>              (default 3)
 *   --requests <n>            of each kind, a round (default 10000)
 *   --mode memory|file        (default memory)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMillisOf, memoryOf, ROOT, SANDBOX_FLAGS, SANDBOX_NODE_FLAGS } from './children.js';
import { createAccount, createShipments, headersFor, round, runLoad } from './load.js';

const { values } = parseArgs({
  options: {
    config: { type: 'string', multiple: true, default: [''] },
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '10000' },
    mode: { type: 'string', default: 'memory' },
  },
});
const configs = values.config as string[];
const requests = Number(values.requests);
const storage = values.mode === 'file' ? 'file' : 'memory';
const CONNECTIONS = 10;

type Kind =
  | 'POST /v1/shipments'
  | 'GET /v1/shipments/:id'
  | 'GET /v1/shipments?limit=20'
  | 'page walk, limit=100';
const figures = new Map<string, Map<Kind, number[]>>();
const memory = new Map<string, number[]>();

/** The sandbox of a configuration: its build (dist/ unless named) and node flags. */
function startSandbox(
  config: string,
): Promise<{ pid: number; url: string; child: ChildProcess; dataDir?: string }> {
  const words = config.split(' ').filter(Boolean);
  const build =
    words[0] && !words[0].startsWith('-') && existsSync(resolve(ROOT, words[0])) ? words.shift() : 'dist';
  // File mode in a fresh folder, removed when the sandbox stops.
  const dataDir = storage === 'file' ? mkdtempSync(join(tmpdir(), 'sandbox-cpu-')) : undefined;
  const flags = dataDir
    ? ['--data-dir', dataDir, ...SANDBOX_FLAGS.filter((flag) => flag !== '--memory')]
    : SANDBOX_FLAGS;
  const nodeFlags = [...SANDBOX_NODE_FLAGS, ...words];
  const child = spawn(process.execPath, [...nodeFlags, resolve(ROOT, build as string, 'main.js'), ...flags], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /"ready":true,.*?"origin":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout);
      if (match) {
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume();
        resolve({
          pid: child.pid as number,
          url: match[1] as string,
          child,
          ...(dataDir ? { dataDir } : {}),
        });
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`sandbox exited (${code}) before it was ready:\n${stdout}`)),
    );
  });
}

async function measure(config: string): Promise<void> {
  const sandbox = await startSandbox(config);
  try {
    const base = sandbox.url;
    const key = await createAccount(base, 'cpu-per-request');
    const perRequest = async (kind: Kind, run: () => Promise<number>) => {
      const before = cpuMillisOf(sandbox.pid) ?? 0;
      const answered = await run();
      const micros = (((cpuMillisOf(sandbox.pid) ?? 0) - before) * 1000) / answered;
      const kinds = figures.get(config) ?? new Map<Kind, number[]>();
      figures.set(config, kinds);
      kinds.set(kind, [...(kinds.get(kind) ?? []), micros]);
    };
    // Warm up: the code optimised, the account not empty.
    const { ids } = await createShipments(base, key, 2000, CONNECTIONS, { collectIds: true, unique: true });
    await perRequest('POST /v1/shipments', async () => {
      await createShipments(base, key, requests, CONNECTIONS, { unique: true });
      return requests;
    });
    let next = 0;
    await perRequest('GET /v1/shipments/:id', async () => {
      const result = await runLoad({
        url: base,
        path: '/v1/shipments',
        headers: headersFor(key),
        connections: CONNECTIONS,
        amount: requests,
        next: () => ({ path: `/v1/shipments/${ids[next++ % ids.length]}` }),
      });
      return result.ok;
    });
    await perRequest('GET /v1/shipments?limit=20', async () => {
      const result = await runLoad({
        url: base,
        path: '/v1/shipments?limit=20',
        headers: headersFor(key),
        connections: CONNECTIONS,
        amount: requests,
      });
      return result.ok;
    });
    await perRequest('page walk, limit=100', async () => {
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor ? `limit=100&cursor=${encodeURIComponent(cursor)}` : 'limit=100';
        const response = await fetch(`${base}/v1/shipments?${query}`, { headers: headersFor(key) });
        const page = (await response.json()) as { meta: { cursor: string | null; has_more: boolean } };
        cursor = page.meta.has_more ? page.meta.cursor : null;
        pages++;
      } while (cursor);
      return pages;
    });
    memory.set(config, [...(memory.get(config) ?? []), memoryOf(sandbox.pid).rssMiB ?? 0]);
  } finally {
    sandbox.child.kill('SIGTERM');
    await new Promise((resolve) => sandbox.child.once('exit', resolve));
    if (sandbox.dataDir) rmSync(sandbox.dataDir, { recursive: true, force: true });
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

for (let r = 0; r < Number(values.rounds); r++) {
  for (const config of configs) {
    await measure(config);
    process.stderr.write(`round ${r + 1}, "${config}" done\n`);
  }
}
console.log(`server CPU a request, µs (median of ${values.rounds} rounds; each round's figures in brackets)`);
for (const config of configs) {
  console.log(`\n"${config || 'defaults'}"  RSS at the end: ${(memory.get(config) ?? []).join(', ')} MiB`);
  for (const [kind, micros] of figures.get(config) ?? []) {
    console.log(
      `  ${kind.padEnd(28)} ${round(median(micros), 1)}  [${micros.map((m) => round(m, 1)).join(', ')}]`,
    );
  }
}

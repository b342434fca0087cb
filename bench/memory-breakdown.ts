/**
 * Where a sandbox's resident memory goes (issue 17): `npx tsx bench/memory-breakdown.ts [options]`,
 * after `npm run build`. Starts the built sandbox as the benchmark does (bench/children.ts), with
 * bench/memory-probe.cjs loaded into it, fills one account through the API, and breaks the resident
 * memory down at each step: the process's mappings (/proc/PID/smaps: the Node binary and libraries,
 * the C heap, the anonymous mappings, among them SQLite's memdb buffer), V8's heap (before and after a
 * full collection), and the database's pages by table and index.
 *
 *   --mode memory|file     where the database lives (default memory)
 *   --shipments <n>        shipments to create, as bench/scale.ts does (default 20000)
 *   --labels <n>           instead: shipments with a ZPL label each, as bench/labels.ts does
 *   --lists                after the inserts, the list runs of bench/scale.ts (and a page walk)
 *   --accounts <n>         instead: n accounts at their caps (100 webhooks and 100 fault rules each, shipments
 *                          read twice so that their answers are kept, a journal), then each account reset:
 *                          what a reset lets go of (docs/behaviour.md), after a full collection
 *   --duration <s>         seconds of each list run (default 10)
 *   --connections <n>      (default 10)
 *   --node-arg <flag>      a node flag for the sandbox, repeatable
 *   --build <dir>          the build to start (default dist; another checkout's, to compare)
 *   --data-dir <dir>       file mode in this folder, kept afterwards (default: a temporary one, removed)
 *   --json <file>          also write every probe as JSON
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, SANDBOX_FLAGS, SANDBOX_NODE_FLAGS } from './children.js';
import { api, createAccount, createLabels, createShipments, headersFor, round, runLoad } from './load.js';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'memory' },
    shipments: { type: 'string', default: '20000' },
    labels: { type: 'string' },
    lists: { type: 'boolean', default: false },
    accounts: { type: 'string' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    'node-arg': { type: 'string', multiple: true, default: [] },
    build: { type: 'string', default: 'dist' },
    'data-dir': { type: 'string' },
    json: { type: 'string' },
  },
});
const memory = values.mode !== 'file' && values['data-dir'] === undefined;
const labels = values.labels === undefined ? 0 : Number(values.labels);
const shipments = labels || Number(values.shipments);
const connections = Number(values.connections);
const duration = Number(values.duration);

interface Probe {
  heap: HeapFigures;
  afterGc?: HeapFigures;
  databases: {
    name: string;
    memory: boolean;
    mib: number;
    freelistMiB: number;
    objects: { name: string; mib: number; payloadMiB: number; unusedMiB: number }[];
  }[];
}
interface HeapFigures {
  rssMiB: number;
  heapTotalMiB: number;
  heapUsedMiB: number;
  heapPhysicalMiB: number;
  externalMiB: number;
  arrayBuffersMiB: number;
  mallocedByV8MiB: number;
  spaces: Record<string, { sizeMiB: number; usedMiB: number; physicalMiB: number }>;
}

interface Mapping {
  start: number;
  name: string;
  sizeKiB: number;
  rssKiB: number;
  anonKiB: number;
}

/** The process's mappings, from /proc/PID/smaps. */
function mappings(pid: number): Mapping[] {
  const list: Mapping[] = [];
  let current: Mapping | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      current = {
        start: Number.parseInt(header[1] as string, 16),
        name: header[3] ?? '',
        sizeKiB: 0,
        rssKiB: 0,
        anonKiB: 0,
      };
      list.push(current);
      continue;
    }
    const field = /^(\w+):\s+(\d+) kB/.exec(line);
    if (!field || !current) continue;
    if (field[1] === 'Size') current.sizeKiB = Number(field[2]);
    else if (field[1] === 'Rss') current.rssKiB = Number(field[2]);
    else if (field[1] === 'Anonymous') current.anonKiB = Number(field[2]);
  }
  return list;
}

const mibOf = (kib: number) => round(kib / 1024, 1);

/** One line per part of the resident memory. */
function breakdown(pid: number, probe: Probe): Record<string, number | string> {
  const maps = mappings(pid);
  const rss = maps.reduce((sum, m) => sum + m.rssKiB, 0);
  const fileBacked = maps.filter((m) => m.name.startsWith('/'));
  const byFile = new Map<string, number>();
  for (const m of fileBacked) {
    const base = m.name.split('/').pop() as string;
    byFile.set(base, (byFile.get(base) ?? 0) + m.rssKiB);
  }
  const topFiles = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 3);
  const brk = maps.filter((m) => m.name === '[heap]').reduce((sum, m) => sum + m.rssKiB, 0);
  const anon = maps.filter((m) => m.name === '');
  const anonRss = anon.reduce((sum, m) => sum + m.rssKiB, 0);
  const memdbBytes = probe.databases.find((db) => db.memory)?.mib;
  // memdb's buffer: one anonymous mapping at least as large as the database, the closest in size.
  const memdb =
    memdbBytes === undefined
      ? undefined
      : anon
          .filter((m) => m.sizeKiB >= memdbBytes * 1024 && m.rssKiB >= memdbBytes * 1024 * 0.9)
          .sort((a, b) => a.sizeKiB - b.sizeKiB)[0];
  // Read after the probe answered: after its collection, when it made one.
  const heap = probe.afterGc ?? probe.heap;
  const v8 = heap.heapPhysicalMiB;
  const other = mibOf(anonRss + brk - (memdb?.rssKiB ?? 0)) - v8;
  return {
    rss: mibOf(rss),
    files: `${mibOf(fileBacked.reduce((s, m) => s + m.rssKiB, 0))} (${topFiles.map(([n, k]) => `${n} ${mibOf(k)}`).join(', ')})`,
    'C heap (brk)': mibOf(brk),
    'anonymous mappings': mibOf(anonRss),
    memdb: memdb ? `${mibOf(memdb.rssKiB)} resident of ${mibOf(memdb.sizeKiB)} mapped` : '-',
    'V8 heap (physical)': v8,
    'V8 heap used': heap.heapUsedMiB,
    'external (array buffers)': `${heap.externalMiB} (${heap.arrayBuffersMiB})`,
    'C heap and anon beside memdb and V8': round(other, 1),
    'V8 spaces (physical)': Object.entries(heap.spaces)
      .filter(([, s]) => s.physicalMiB >= 0.5)
      .map(([name, s]) => `${name.replace('_space', '')} ${s.physicalMiB}`)
      .join(', '),
    // V8's pages are mappings of 256 KiB each: the list is of the others.
    'largest anonymous mappings (rss/size)': anon
      .filter((m) => m.sizeKiB > 256)
      .sort((a, b) => b.rssKiB - a.rssKiB)
      .slice(0, 8)
      .map((m) => `${mibOf(m.rssKiB)}/${mibOf(m.sizeKiB)}`)
      .join(' '),
    database: probe.databases
      .map(
        (db) =>
          `${db.mib} MiB (free ${db.freelistMiB}): ` +
          db.objects
            .slice(0, 12)
            .map((o) => `${o.name} ${o.mib}`)
            .join(', '),
      )
      .join('; '),
  };
}

function startSandbox(): Promise<{ child: ChildProcess; url: string; dataDir?: string }> {
  const dataDir = memory ? undefined : (values['data-dir'] ?? mkdtempSync(join(tmpdir(), 'sandbox-memory-')));
  const flags = memory
    ? SANDBOX_FLAGS
    : ['--data-dir', dataDir as string, ...SANDBOX_FLAGS.filter((f) => f !== '--memory')];
  const child = spawn(
    process.execPath,
    [
      ...SANDBOX_NODE_FLAGS,
      ...(values['node-arg'] as string[]),
      '--require',
      join(ROOT, 'bench/memory-probe.cjs'),
      resolve(ROOT, values.build as string, 'main.js'),
      ...flags,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
  );
  return new Promise((resolve, reject) => {
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /"ready":true,.*?"origin":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout);
      if (match) {
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume();
        resolve({ child, url: match[1] as string, ...(dataDir ? { dataDir } : {}) });
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`sandbox exited (${code}) before it was ready:\n${stdout}`)),
    );
  });
}

function probe(child: ChildProcess, gc: boolean): Promise<Probe> {
  return new Promise((resolve) => {
    child.once('message', (message) => resolve(message as Probe));
    child.send({ type: 'probe', gc });
  });
}

const report: Record<string, unknown> = {};
const sandbox = await startSandbox();
const pid = sandbox.child.pid as number;
const show = async (step: string, gc = false) => {
  const figures = await probe(sandbox.child, gc);
  const lines = breakdown(pid, figures);
  report[step] = { breakdown: lines, probe: figures };
  console.log(`\n== ${step}`);
  for (const [name, value] of Object.entries(lines)) console.log(`  ${name.padEnd(38)} ${value}`);
};

/** An account at its caps, using what the sandbox keeps in memory for it; its key. */
async function fillAccount(url: string, index: number): Promise<string> {
  const key = await createAccount(url, `memory-breakdown ${index}`);
  const post = (path: string, body: unknown) => api(url, key, 'POST', path, body);
  for (let start = 0; start < 100; start += 10) {
    await Promise.all(
      Array.from({ length: 10 }, (_, j) => [
        post('/v1/webhooks', {
          url: `http://127.0.0.1:9/hooks/${start + j}`,
          events: ['tracking.exception'],
          secret: 'whsec_memory-breakdown-secret',
        }),
        post('/_sandbox/faults', { path: `/v1/nowhere/${start + j}`, status: 503 }),
      ]).flat(),
    );
  }
  await createShipments(url, key, 20, 5, { unique: true });
  for (let read = 0; read < 2; read++) await api(url, key, 'GET', '/v1/shipments?limit=20');
  return key;
}

try {
  if (values.accounts !== undefined) {
    const count = Number(values.accounts);
    await show('idle, after a full GC', true);
    const keys: string[] = [];
    for (let i = 0; i < count; i++) keys.push(await fillAccount(sandbox.url, i));
    await show(`${count} accounts at their caps, after a full GC`, true);
    for (const key of keys) await api(sandbox.url, key, 'POST', '/_sandbox/reset');
    await show(`${count} accounts reset, after a full GC`, true);
  } else {
    const key = await createAccount(sandbox.url, 'memory-breakdown');
    await show('idle');
    const started = performance.now();
    let failures = 0;
    for (let slice = 0; slice < 10; slice++) {
      const count = Math.floor(shipments / 10) + (slice < shipments % 10 ? 1 : 0);
      const made = await createShipments(sandbox.url, key, count, connections, {
        unique: !labels,
        collectIds: labels > 0,
      });
      failures += made.failures;
      if (labels) failures += (await createLabels(sandbox.url, key, made.ids, 'zpl', connections)).failures;
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `\n${shipments} shipments${labels ? ' with ZPL labels' : ''} (${memory ? '--memory' : 'file mode'}) in ${round(seconds, 1)} s, ${failures} failed`,
    );
    await show('after the inserts');
    if (values.lists) {
      const list = (conns: number, secs: number) =>
        runLoad({
          url: sandbox.url,
          path: '/v1/shipments?limit=20',
          headers: headersFor(key),
          connections: conns,
          duration: secs,
        });
      await list(connections, duration);
      await list(1, Math.max(1, duration / 2));
      let cursor: string | null = null;
      do {
        const query: string = cursor ? `limit=100&cursor=${encodeURIComponent(cursor)}` : 'limit=100';
        const response = await fetch(`${sandbox.url}/v1/shipments?${query}`, { headers: headersFor(key) });
        const page = (await response.json()) as { meta: { cursor: string | null; has_more: boolean } };
        cursor = page.meta.has_more ? page.meta.cursor : null;
      } while (cursor);
      await show('after the list runs');
    }
    await show('after a full GC (forced; not what the benchmark sees)', true);
  }
  if (values.json) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
} finally {
  sandbox.child.kill('SIGTERM');
  await new Promise((resolve) => sandbox.child.once('exit', resolve));
  if (sandbox.dataDir && values['data-dir'] === undefined)
    rmSync(sandbox.dataDir, { recursive: true, force: true });
}

import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument } from 'pdf-lib';
import pngjs from 'pngjs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { SqliteSql } from '../src/db/sqlite.js';
import { labelDocument } from '../src/labels/files.js';
import { renderLabel } from '../src/labels/render/index.js';
import { LabelStore } from '../src/labels/store.js';
import { ShipmentStore } from '../src/shipments/store.js';
import { createTestSandbox, DEFAULT_KEY, shipmentRequest } from './helpers.js';

/**
 * The built command (`dist/main.js`, the launcher, and the bundle it loads through V8's code cache), as
 * `npm start` runs it: the rest of the suite runs `src/`, so this is where the bundle is proven.
 * `npm test` builds before it runs the tests.
 */
const scratch = mkdtempSync(join(tmpdir(), 'sandbox-built-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function start(
  dataDir: string,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcessWithoutNullStreams; origin: string; stderr: () => string }> {
  // Its own TMPDIR: nothing kept by another start (a certificate, a code cache) is used.
  const child = spawn(
    'node',
    [
      'dist/main.js',
      '--data-dir',
      dataDir,
      '--port',
      '0',
      '--https-port',
      '0',
      '--log-level',
      'warn',
      ...extraArgs,
    ],
    {
      env: { ...process.env, TMPDIR: scratch, ...env },
      stdio: 'pipe',
    },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const origin = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += String(chunk);
      const match = /"ready":true,.*"origin":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', () => reject(new Error(`exited early: ${stderr}`)));
  });
  return { child, origin, stderr: () => stderr };
}

async function stop(child: ChildProcessWithoutNullStreams) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

describe('the built command', () => {
  it.each([
    ['compiling the bundle', { SANDBOX_CODE_CACHE: 'off' }],
    ["from the build's code cache", {}],
  ])('creates a label and renders its PDF: %s', async (round, env) => {
    expect(existsSync('dist/main.js'), 'npm test builds dist/ first').toBe(true);
    const { child, origin, stderr } = await start(join(scratch, `data-${round.length}`), [], env);
    try {
      const headers = { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' };
      const shipment = (await (
        await fetch(`${origin}/v1/shipments`, {
          method: 'POST',
          headers,
          body: JSON.stringify(shipmentRequest({ carrier: 'ups' })),
        })
      ).json()) as { id: string };
      const label = (await (
        await fetch(`${origin}/v1/labels`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ shipment_id: shipment.id }),
        })
      ).json()) as { id: string };
      const file = await fetch(`${origin}/v1/labels/${label.id}/download`, { headers });
      expect(file.status).toBe(200);
      const pdf = await PDFDocument.load(new Uint8Array(await file.arrayBuffer()));
      expect(pdf.getPage(0).getSize()).toEqual({ width: 288, height: 432 });
      expect(stderr()).toBe('');
    } finally {
      await stop(child);
    }
  });

  // The installed package, which has no swagger-ui-dist at all, is proven by test/package.test.ts.
  it("serves /docs with the build's copy of Swagger UI", async () => {
    const { child, origin, stderr } = await start(join(scratch, 'data-docs'));
    try {
      expect((await fetch(`${origin}/docs`)).status).toBe(200);
      for (const name of ['swagger-ui-bundle.js', 'swagger-ui.css']) {
        const asset = await fetch(`${origin}/docs/assets/${name}`);
        expect(asset.status, name).toBe(200);
        expect(await asset.text()).toBe(readFileSync(join('dist', 'swagger-ui', name), 'utf8'));
      }
      expect(stderr()).toBe('');
    } finally {
      await stop(child);
    }
  });

  it('prints its version and help, and its control commands drive a running sandbox', async () => {
    const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
    expect(execFileSync('node', ['dist/main.js', '--version'], { encoding: 'utf8' })).toBe(`${version}\n`);
    expect(execFileSync('node', ['dist/main.js', '--help'], { encoding: 'utf8' })).toContain('clock');
    const { child, origin, stderr } = await start(join(scratch, 'data-control'));
    try {
      const control = (args: string[]) =>
        JSON.parse(execFileSync('node', ['dist/main.js', ...args, '--url', origin], { encoding: 'utf8' }));
      expect(control(['clock', 'freeze'])).toMatchObject({ frozen: true });
      // The build reads the built-in scenarios' files for the bundle: the same as the sources read.
      const fromSources = await (await createTestSandbox()).call('GET', '/_sandbox/scenarios');
      expect(control(['scenarios'])).toEqual(fromSources.json);
      expect(fromSources.json.data.length).toBeGreaterThan(0);
      expect(stderr()).toBe('');
    } finally {
      await stop(child);
    }
  });

  it('renders a bought label ahead of its download, on a thread of the lowest priority', async () => {
    const dataDir = join(scratch, 'data-ahead');
    const { child, origin, stderr } = await start(dataDir);
    const headers = { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' };
    let label: { id: string };
    let bytes: Buffer;
    try {
      const buy = async (format: string) => {
        const body = JSON.stringify(shipmentRequest({ carrier: 'fedex' }));
        const shipment = (await (
          await fetch(`${origin}/v1/shipments`, { method: 'POST', headers, body })
        ).json()) as { id: string };
        return (await (
          await fetch(`${origin}/v1/labels`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ shipment_id: shipment.id, format }),
          })
        ).json()) as { id: string };
      };
      // Files are rendered ahead only while labels are being downloaded: one is bought and downloaded
      // first.
      const first = await buy('zpl');
      expect((await fetch(`${origin}/v1/labels/${first.id}/download`, { headers })).status).toBe(200);
      label = await buy('pdf');
      // Not downloaded yet: a thread at nice 19 loads the renderers and renders the file (well over
      // 50 ms of CPU), while the main thread keeps its priority.
      const threadsOf = () =>
        readdirSync(`/proc/${child.pid}/task`).map((tid) => {
          const stat = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8');
          const fields = stat
            .slice(stat.lastIndexOf(')') + 2)
            .split(' ')
            .map(Number);
          return { tid: Number(tid), ticks: (fields[11] ?? 0) + (fields[12] ?? 0), nice: fields[16] };
        });
      await vi.waitFor(
        () => expect(threadsOf().filter((t) => t.nice === 19 && t.ticks >= 1)).toHaveLength(1),
        // At nice 19 the thread gets a sliver of a CPU that the suite's other files keep busy.
        { timeout: 40_000, interval: 50 },
      );
      expect(threadsOf().find((t) => t.tid === child.pid)?.nice).toBeLessThan(19);
      const file = await fetch(`${origin}/v1/labels/${label.id}/download`, { headers });
      expect(file.status).toBe(200);
      bytes = Buffer.from(await file.arrayBuffer());
      expect(stderr()).toBe('');
    } finally {
      await stop(child);
    }
    const db = openDatabase(join(dataDir, 'sandbox.db'));
    try {
      const sql = new SqliteSql(db);
      const record = await new LabelStore().findAnywhere(sql, label.id);
      const shipment =
        record && (await new ShipmentStore(sql).find(sql, record.accountId, record.shipmentId));
      if (!record || !shipment) throw new Error(`label ${label.id} is not in the database`);
      expect(bytes.equals(Buffer.from((await renderLabel(labelDocument(record, shipment))).bytes))).toBe(
        true,
      );
    } finally {
      db.close();
    }
  }, 60_000);

  it.each([
    ['2', 'on its render threads'],
    ['0', 'on its main thread'],
  ])(
    'renders files (--render-threads %s) %s, several at once, to the bytes the in-process renderer makes',
    async (threads) => {
      const dataDir = join(scratch, `data-threads-${threads}`);
      const { child, origin, stderr } = await start(dataDir, ['--render-threads', threads]);
      const headers = { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' };
      const made: { id: string; format: string; accountId?: string; bytes: Buffer }[] = [];
      try {
        for (const [carrier, format] of [
          ['usps', 'pdf'],
          ['ups', 'png'],
          ['fedex', 'pdf'],
          ['dhl_express', 'png'],
        ] as const) {
          const body = JSON.stringify(shipmentRequest({ carrier }));
          const shipment = (await (
            await fetch(`${origin}/v1/shipments`, { method: 'POST', headers, body })
          ).json()) as {
            id: string;
          };
          const label = (await (
            await fetch(`${origin}/v1/labels`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ shipment_id: shipment.id, format }),
            })
          ).json()) as { id: string };
          made.push({ id: label.id, format, bytes: Buffer.alloc(0) });
        }
        const threadsBefore = new Set(readdirSync(`/proc/${child.pid}/task`));
        const files = await Promise.all(
          made.map((label) => fetch(`${origin}/v1/labels/${label.id}/download`, { headers })),
        );
        // With threads the renders run on threads made for them: new threads of the process that did
        // the CPU work (loading the renderers and rendering takes well over 100 ms); rendered on the
        // main thread, new threads, if any, are idle helpers.
        const busyNewThreads = readdirSync(`/proc/${child.pid}/task`)
          .filter((tid) => !threadsBefore.has(tid))
          .filter((tid) => {
            const stat = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8');
            const [utime, stime] = stat
              .slice(stat.lastIndexOf(')') + 2)
              .split(' ')
              .slice(11, 13)
              .map(Number);
            return (utime ?? 0) + (stime ?? 0) >= 5; // clock ticks: 50 ms at the usual 100 a second
          });
        if (threads === '0') expect(busyNewThreads).toEqual([]);
        else expect(busyNewThreads.length).toBeGreaterThanOrEqual(1);
        for (const [i, file] of files.entries()) {
          expect(file.status).toBe(200);
          (made[i] as { bytes: Buffer }).bytes = Buffer.from(await file.arrayBuffer());
        }
        expect(stderr()).toBe('');
      } finally {
        await stop(child);
      }

      const db = openDatabase(join(dataDir, 'sandbox.db'));
      try {
        const sql = new SqliteSql(db);
        const labels = new LabelStore();
        const shipments = new ShipmentStore(sql);
        for (const { id, format, bytes } of made) {
          const label = await labels.findAnywhere(sql, id);
          const shipment = label && (await shipments.find(sql, label.accountId, label.shipmentId));
          if (!label || !shipment) throw new Error(`label ${id} is not in the database`);
          const inProcess = await renderLabel(labelDocument(label, shipment));
          expect(bytes.equals(Buffer.from(inProcess.bytes)), `${format} ${id}`).toBe(true);
          if (format === 'png') expect(pngjs.PNG.sync.read(bytes).width).toBe(812);
          else expect((await PDFDocument.load(bytes)).getPageCount()).toBe(1);
        }
      } finally {
        db.close();
      }
    },
  );
});

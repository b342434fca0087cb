import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportOf, runScript } from '../src/conformance/run.js';
import { SCRIPT } from '../src/conformance/script.js';
import { SANDBOX_VERSION as version } from '../src/core/version.js';
import { ConformanceError, type ConformanceReport, conformance, startSandbox } from '../src/index.js';
import { callSandbox, newAccountAt, type Run, runCli } from './cli-harness.js';
import { closedPortUrl } from './receiver.js';
import { elementsNamed, parseXml } from './xml.js';

/**
 * `conformance` as a merchant runs it: against another sandbox, a real process (the built
 * `dist/main.js`; `npm test` builds it first) that every test of this file shares, each test in an
 * account of its own. In-process through `conformance()`, and through the command as a CI job runs
 * it. The target is changed by its own fault rules, or by a small proxy in front of it; the
 * reference is always the command's own in-memory sandbox.
 */

const SPAWNS = 60_000;
/** Loopback, as every address a test sends to: nothing listens on port 9, and no event is raised for it. */
const WEBHOOK_URL = 'https://127.0.0.1:9/conformance';

let target: ChildProcessWithoutNullStreams;
let origin: string;
let folder: string;
beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'conformance-'));
  target = spawn(
    process.execPath,
    // Its labels rendered inline: a few labels do not need render threads (and their memory).
    [
      'dist/main.js',
      '--memory',
      '--port',
      '0',
      '--https-port',
      '0',
      '--log-level',
      'silent',
      '--render-threads',
      '0',
    ],
    { stdio: 'pipe' },
  );
  let stdout = '';
  let stderr = '';
  target.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  origin = await new Promise<string>((resolve, reject) => {
    target.stdout.on('data', (chunk) => {
      stdout += String(chunk);
      const ready = /"ready":true,.*"origin":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout);
      if (ready) resolve(ready[1] as string);
    });
    target.once('exit', () => reject(new Error(`the target sandbox exited: ${stderr}`)));
  });
}, SPAWNS);
afterAll(async () => {
  const exited = new Promise((resolve) => target.once('exit', resolve));
  target.kill('SIGTERM');
  await exited;
  rmSync(folder, { recursive: true, force: true });
});

const api = (method: string, path: string, key: string | null, body?: unknown) =>
  callSandbox(origin, method, path, key, body);

/** A fresh account of the target, with these fault rules. */
async function account(faults: object[] = []): Promise<string> {
  const key = await newAccountAt(origin);
  for (const fault of faults) expect((await api('POST', '/_sandbox/faults', key, fault)).status).toBe(201);
  return key;
}

const TRACKING_DOWN = { method: 'GET', path: '/v1/tracking/*', status: 503, code: 'service_unavailable' };

const differing = (report: ConformanceReport) =>
  Object.fromEntries(report.steps.filter((s) => s.result === 'different').map((s) => [s.id, s.differences]));

describe.concurrent('conformance against another sandbox process', { timeout: SPAWNS }, () => {
  it('finds nothing different, answers each step as the script says, and leaves nothing behind', async () => {
    const key = await account();
    const reference = await startSandbox({ logLevel: 'silent', renderThreads: 0 });
    const { runs, cleanup } = await runScript(
      { target: `${origin}/v1`, key, webhookUrl: WEBHOOK_URL, timeoutMs: 30_000 },
      reference,
    );
    await reference.stop();
    const report = reportOf(`${origin}/v1`, runs, cleanup);

    expect(report.summary).toEqual({ same: 42, different: 0, skipped: 5 });
    expect(report.steps.map((step) => step.id)).toEqual(SCRIPT.map((step) => step.id));
    for (const step of report.steps.filter((s) => s.result === 'skipped'))
      expect(step.reason).toMatch(/only the sandbox's own controls|does not flood/);
    // Each answer is the one the script documents, on both sides.
    for (const run of runs.filter((r) => r.skipped === undefined)) {
      const [status, code, field] = run.step.expect.split(' ');
      for (const answer of [run.sandbox, run.target]) {
        const error = (answer?.json as { error?: { code: string; field?: string } } | undefined)?.error;
        expect([answer?.status, error?.code, error?.field], run.step.id).toEqual([
          Number(status),
          code,
          field,
        ]);
      }
    }
    // The shipments are cancelled, their labels voided with them, and the webhook deleted.
    expect(cleanup).toEqual([
      { call: expect.stringMatching(/^DELETE \/webhooks\/wh_/), status: 200, done: true },
    ]);
    const { body: shipments } = await api('GET', '/v1/shipments', key);
    expect(shipments.data.map((s: { status: string }) => s.status)).toEqual([
      'cancelled',
      'cancelled',
      'cancelled',
    ]);
    expect((await api('GET', '/v1/webhooks', key)).body.data).toEqual([]);
  });

  it('names each status and error code that fault rules on the target change, and waits out a 429', async () => {
    const key = await account([
      TRACKING_DOWN,
      { method: 'DELETE', path: '/v1/shipments/*', status: 409, code: 'shipment_locked', times: 1 },
      { method: 'GET', path: '/v1/shipments/*', status: 429, retry_after: 0, times: 1 },
    ]);
    const report = await conformance({ target: `${origin}/v1`, key, webhookUrl: WEBHOOK_URL });
    expect(differing(report)).toEqual({
      'tracking.get': [
        { path: 'status', expected: 200, actual: 503 },
        { path: 'body.error.code', expected: '(absent)', actual: '"service_unavailable"' },
      ],
      'tracking.get.unknown': [
        { path: 'status', expected: 404, actual: 503 },
        { path: 'body.error.code', expected: '"not_found"', actual: '"service_unavailable"' },
      ],
      // The first cancel was refused, so the second one cancels: the difference shows twice.
      'shipments.cancel': [
        { path: 'status', expected: 200, actual: 409 },
        { path: 'body.error.code', expected: '(absent)', actual: '"shipment_locked"' },
      ],
      'shipments.cancel.again': [
        { path: 'status', expected: 422, actual: 200 },
        { path: 'body.error.code', expected: '"shipment_not_cancellable"', actual: '(absent)' },
      ],
    });
    expect(report.summary).toEqual({ same: 38, different: 4, skipped: 5 });
    // The 429 came, and the call was made again, as its Retry-After allowed.
    const { body: journal } = await api('GET', '/_sandbox/requests?limit=100', key);
    const reads = journal.data.filter(
      (r: { method: string; path: string }) => r.method === 'GET' && /^\/v1\/shipments\/shp_/.test(r.path),
    );
    expect(reads.map((r: { status: number }) => r.status).slice(-2)).toEqual([200, 429]);
  });

  it('names, with its path, a renamed field, a dropped header and a changed error code', async () => {
    const key = await account();
    const proxy = await startChangingProxy(origin);
    try {
      const report = await conformance({ target: `${proxy.origin}/v1`, key, webhookUrl: WEBHOOK_URL });
      const found = differing(report);
      const dropped = { path: 'header:x-ratelimit-remaining', expected: 'present', actual: '(absent)' };
      expect(found['shipments.create']).toEqual([
        dropped,
        { path: 'body.service', expected: 'string', actual: '(absent)' },
        { path: 'body.service_level', expected: '(absent)', actual: 'string' },
      ]);
      expect(found['shipments.list']).toEqual([
        dropped,
        { path: 'body.data[].service', expected: 'string', actual: '(absent)' },
        { path: 'body.data[].service_level', expected: '(absent)', actual: 'string' },
      ]);
      for (const id of [
        'shipments.get.unknown-id',
        'labels.create.unknown-shipment',
        'tracking.get.unknown',
        'labels.void.unknown-id',
        'shipments.cancel.unknown-id',
      ])
        expect(found[id], id).toEqual([
          dropped,
          { path: 'body.error.code', expected: '"not_found"', actual: '"resource_not_found"' },
        ]);
      // Answers without the rate-limit headers on either side (no key; the label files) are the same.
      expect(found['auth.no-key']).toBeUndefined();
      expect(found['labels.url.pdf']).toBeUndefined();
      expect(found['labels.download.png']).toEqual([dropped]);
      // Only the API and its label files were called: never /_sandbox.
      expect(proxy.paths.length).toBeGreaterThan(30);
      expect(proxy.paths.filter((path) => !/^\/(v1|cdn)\//.test(path))).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('rejects, saying which, when the target cannot be reached or refuses the key', async () => {
    const closed = new URL(await closedPortUrl()).origin;
    const unreachable = await conformance({ target: `${closed}/v1`, key: 'svc_test_any' }).catch((e) => e);
    expect(unreachable).toBeInstanceOf(ConformanceError);
    expect(unreachable.reason).toBe('unreachable');
    expect(unreachable.message).toContain(`the target ${closed}/v1 could not be reached (`);

    const refused = await conformance({ target: `${origin}/v1`, key: 'svc_test_nobody' }).catch((e) => e);
    expect(refused).toBeInstanceOf(ConformanceError);
    expect(refused.reason).toBe('key_refused');
    expect(refused.message).toContain(
      'the target refused the key on the first call (POST /shipments answered 401 invalid_api_key: The API key is not valid.)',
    );
  });
});

describe.concurrent('shipping-sandbox conformance', { timeout: SPAWNS }, () => {
  const cli = (args: string[]): Promise<Run> =>
    runCli(origin, ['conformance', '--webhook-url', WEBHOOK_URL, ...args]);

  it('exits with 0 and prints the JSON report when nothing differs', async () => {
    const key = await account();
    const run = await cli(['--target', `${origin}/v1/`, '--key', key, '--json']);
    expect(run.stderr).toBe(
      'conformance: the target answered every step as the sandbox did (42 same, 5 skipped)\n',
    );
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as ConformanceReport;
    expect(report.target).toBe(`${origin}/v1`);
    expect(report.summary).toEqual({ same: 42, different: 0, skipped: 5 });
    expect(report.steps[0]).toEqual({
      id: 'shipments.create',
      call: 'POST /shipments',
      result: 'same',
      differences: [],
    });
    expect(report.steps.find((s) => s.id === 'shipments.cancel.delivered')).toEqual({
      id: 'shipments.cancel.delivered',
      call: 'DELETE /shipments/{third.id}',
      result: 'skipped',
      differences: [],
      reason: expect.stringContaining('forced tracking status'),
    });
    expect(report.cleanup).toEqual([
      { call: expect.stringMatching(/^DELETE \/webhooks\/wh_/), status: 200, done: true },
    ]);
  });

  it('exits with 1, prints the table and writes one JUnit test case a step when something differs', async () => {
    const key = await account([TRACKING_DOWN]);
    const junit = join(folder, 'conformance.xml');
    const run = await cli(['--target', `${origin}/v1`, '--key', key, '--junit', junit]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'conformance: the target differs from the sandbox in 2 steps: tracking.get, tracking.get.unknown\n',
    );
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe(`Conformance of ${origin}/v1 with shipping-sandbox ${version}, step by step:`);
    expect(lines).toContain('same       shipments.create                  POST /shipments');
    expect(lines).toContain(
      'DIFFERENT  tracking.get                      GET /tracking/{pdf.tracking_number}',
    );
    expect(lines).toContain('skipped    labels.void.scanned               DELETE /labels/{pdf.id}');
    // Each difference once, with its steps; then each step with its own.
    expect(run.stdout).toContain(
      [
        'Each difference, and the steps that show it:',
        '  WHERE            SANDBOX      TARGET                 STEPS',
        '  status           200          503                    tracking.get',
        '  body.error.code  (absent)     "service_unavailable"  tracking.get',
        '  status           404          503                    tracking.get.unknown',
        '  body.error.code  "not_found"  "service_unavailable"  tracking.get.unknown',
        '',
        'tracking.get: GET /tracking/{pdf.tracking_number}',
        '  Track the parcel of the label just bought.',
        '  WHERE            SANDBOX   TARGET',
        '  status           200       503',
        '  body.error.code  (absent)  "service_unavailable"',
      ].join('\n'),
    );
    expect(run.stdout).toMatch(/^ {2}labels\.void\.scanned +needs a forced tracking status/m);
    expect(run.stdout).toMatch(/^Removed from the target afterwards: DELETE \/webhooks\/wh_\w+\.$/m);
    expect(lines.at(-2)).toBe(
      'DIFFERENT: 2 steps of 47 differ (40 same, 5 skipped). Each line above names the part of the answer, what the sandbox answered there and what the target did.',
    );

    const xml = parseXml(readFileSync(junit, 'utf8'));
    const cases = elementsNamed(xml, 'testcase');
    expect(cases.map((c) => c.attributes.name)).toEqual(SCRIPT.map((step) => step.id));
    const failing = cases.filter((c) => elementsNamed(c, 'failure').length > 0);
    expect(failing.map((c) => c.attributes.name)).toEqual(['tracking.get', 'tracking.get.unknown']);
    expect(elementsNamed(failing[0]!, 'failure')[0]!.text).toBe(
      'Track the parcel of the label just bought: GET /tracking/{pdf.tracking_number}\n' +
        'status: the sandbox answered 200, the target 503\n' +
        'body.error.code: the sandbox answered (absent), the target "service_unavailable"',
    );
    expect(cases.filter((c) => elementsNamed(c, 'skipped').length > 0)).toHaveLength(5);
  });

  it('exits with 2 and says which when the target cannot be reached, or refuses the key', async () => {
    const closed = new URL(await closedPortUrl()).origin;
    const junit = join(folder, 'unreachable.xml');
    const unreachable = await cli(['--target', `${closed}/v1`, '--key', 'svc_test_any', '--junit', junit]);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stdout).toBe('');
    expect(unreachable.stderr).toMatch(
      new RegExp(
        `^error: Could not run: the target ${closed}/v1 could not be reached \\(.*ECONNREFUSED.*\\)`,
      ),
    );
    const [error] = elementsNamed(parseXml(readFileSync(junit, 'utf8')), 'error');
    expect(error?.attributes.message).toMatch(/could not be reached/);

    const refused = await cli(['--target', `${origin}/v1`, '--key', 'svc_test_0123456789']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(
      /^error: Could not run: the target refused the key on the first call \(POST \/shipments answered 401 invalid_api_key: /,
    );
  });

  it('refuses, as usage errors, a target that is not a base URL ending in /v1, and a live key', async () => {
    const run = await cli(['--target', 'https://api.example.com', '--key', 'svc_test_any']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('ending in /v1');
    expect(run.stdout).toBe('');
    const live = await runCli(origin, ['conformance', '--target', 'https://api.example.com/v1'], {
      SHIPPING_CONFORMANCE_KEY: 'svc_live_0123456789',
    });
    expect(live.code).toBe(2);
    expect(live.stderr).toContain(
      'Refusing a live key (svc_live_…): the script creates shipments and buys labels',
    );
  });
});

/**
 * A proxy in front of the target that changes its answers as a drifting service might: `service`
 * renamed `service_level` in every JSON body, `X-RateLimit-Remaining` dropped, and the error code
 * `not_found` answered as `resource_not_found`. It notes the path of every request it passes on.
 */
async function startChangingProxy(upstream: string) {
  const paths: string[] = [];
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      paths.push(new URL(request.url ?? '/', 'http://proxy').pathname);
      // A connection of its own for each call, as the command's: no kept-alive one to race a close.
      const headers = new Headers({ connection: 'close' });
      for (const [name, value] of Object.entries(request.headers))
        if (typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name))
          headers.set(name, value);
      let answer: Response;
      try {
        answer = await fetch(`${upstream}${request.url}`, {
          method: request.method,
          headers,
          body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
          redirect: 'manual',
        });
      } catch (error) {
        // Said to the command, as a gateway would, rather than thrown where nothing catches it.
        response.writeHead(502, { 'content-type': 'text/plain' });
        response.end(`the proxy could not reach the target: ${(error as Error).message}`);
        return;
      }
      let body = Buffer.from(await answer.arrayBuffer());
      if ((answer.headers.get('content-type') ?? '').startsWith('application/json'))
        body = Buffer.from(
          body
            .toString('utf8')
            .replaceAll('"service":', '"service_level":')
            .replaceAll('"code":"not_found"', '"code":"resource_not_found"'),
        );
      const out: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        if (
          !['x-ratelimit-remaining', 'content-length', 'content-encoding', 'transfer-encoding'].includes(name)
        )
          out[name] = value;
      });
      response.writeHead(answer.status, { ...out, 'content-length': String(body.length) });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

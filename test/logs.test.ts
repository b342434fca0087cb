import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { formatLine } from '../src/logger.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * The server's log, read from its stdout as a script or a CI log would read it: the real command
 * (the built `dist/main.js`; `npm test` builds it first), stdout a pipe, so JSON lines unless `--log-format` says otherwise.
 */

type Line = Record<string, unknown>;
const SPAWNS = 60_000;
/** Node runs the built command itself: a signal reaches the server, and nothing compiles at start. */
const MAIN = ['dist/main.js'];
const running: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill('SIGKILL');
});

/** Starts the server and collects its stdout line by line; `until` resolves once a line matches. */
async function serve(flags: string[]) {
  const child = spawn(process.execPath, [...MAIN, '--memory', '--port', '0', '--https-port', '0', ...flags], {
    stdio: 'pipe',
  });
  running.push(child);
  const lines: string[] = [];
  const waiters: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  let partial = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  child.stdout.on('data', (chunk) => {
    const parts = (partial + String(chunk)).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      for (const waiter of [...waiters])
        if (waiter.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
    }
  });
  const until = (test: (line: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const found = lines.find(test);
      if (found !== undefined) return resolve(found);
      waiters.push({ test, resolve });
      child.once('exit', () => reject(new Error(`the server exited: ${stderr}`)));
    });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const ready = JSON.parse(await until((line) => line.includes('"ready":true'))) as { origin: string };
  /** Stops the server and resolves once all it wrote has been read. */
  const stop = () => {
    child.kill('SIGTERM');
    return closed;
  };
  return { origin: ready.origin, lines, until, stop };
}

const parsed = (line: string) => JSON.parse(line) as Line;
const isJson = (line: string) => line.startsWith('{');

describe('the server log', () => {
  it(
    'writes one JSON line a request, a tracking step and a delivery attempt, with the account',
    async () => {
      const { origin, until } = await serve([]);
      const receiver = await startReceiver([200]);
      try {
        const call = async (method: string, path: string, body?: unknown) => {
          const response = await fetch(`${origin}${path}`, {
            method,
            headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          return (await response.json()) as Record<string, string>;
        };
        const webhook = await call('POST', '/v1/webhooks', {
          url: receiver.url,
          events: ['label.generated'],
          secret: 'whsec_a-long-enough-secret',
        });
        const shipment = await call('POST', '/v1/shipments', shipmentRequest({ carrier: 'usps' }));
        const label = await call('POST', '/v1/labels', { shipment_id: shipment.id });
        // Refused: the line names the code and the field to blame; a missing route names its code.
        await call('POST', '/v1/labels', { shipment_id: shipment.id, format: 'gif' });
        await call('GET', '/v1/nowhere');
        // A day on: the label's first steps run, and the label.generated delivery has its outcome.
        await call('POST', '/_sandbox/clock/advance', { by: '1d' });

        const request = parsed(
          await until(
            (line) => isJson(line) && parsed(line).msg === 'request' && parsed(line).path === '/v1/shipments',
          ),
        );
        expect(request).toMatchObject({
          level: 30,
          method: 'POST',
          path: '/v1/shipments',
          status: 201,
          account: 'acct_01JSANDBXDEFACCT0000000001',
        });
        expect(request.duration_ms).toEqual(expect.any(Number));
        expect(request.time).toMatch(/^\d{4}-\d\d-\d\dT/);

        expect(request).not.toHaveProperty('code');
        const refused = parsed(
          await until(
            (line) => isJson(line) && parsed(line).msg === 'request' && parsed(line).status === 422,
          ),
        );
        expect(refused).toMatchObject({
          path: '/v1/labels',
          status: 422,
          code: 'invalid_field',
          field: 'format',
        });
        const noRoute = parsed(
          await until(
            (line) => isJson(line) && parsed(line).msg === 'request' && parsed(line).status === 404,
          ),
        );
        expect(noRoute).toMatchObject({ path: '/v1/nowhere', code: 'route_not_found' });
        expect(noRoute).not.toHaveProperty('field');

        const step = parsed(await until((line) => isJson(line) && parsed(line).msg === 'step'));
        expect(step).toMatchObject({
          level: 30,
          kind: 'tracking.step',
          subject: label.id,
          tracking_number: label.tracking_number,
          account: 'acct_01JSANDBXDEFACCT0000000001',
        });
        expect(['pre_transit', 'accepted', 'in_transit']).toContain(step.status);
        expect(step.due_at).toMatch(/Z$/);

        const delivery = parsed(await until((line) => isJson(line) && parsed(line).msg === 'delivery'));
        expect(delivery).toMatchObject({
          level: 30,
          webhook: webhook.id,
          event: 'label.generated',
          attempt: 0,
          outcome: 'succeeded',
          response_status: 200,
          error: null,
          account: 'acct_01JSANDBXDEFACCT0000000001',
        });
        expect(delivery.delivery).toMatch(/^dlv_/);
        expect(delivery.event_id).toMatch(/^evt_/);
        expect(delivery.duration_ms).toEqual(expect.any(Number));
      } finally {
        await receiver.close();
      }
    },
    SPAWNS,
  );

  it(
    'writes readable lines with --log-format pretty, even into a pipe',
    async () => {
      const { origin, lines, until } = await serve(['--log-format', 'pretty']);
      await fetch(`${origin}/healthz`);
      const line = await until((text) => text.includes('GET /healthz'));
      expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/healthz 200 [\d.]+ ms$/);
      // Only the ready line is JSON: a script still finds it.
      expect(lines.filter(isJson)).toEqual([expect.stringContaining('"ready":true')]);
    },
    SPAWNS,
  );

  it(
    'writes no request lines at --log-level warn (as the benchmark runs it)',
    async () => {
      const { origin, lines, stop } = await serve(['--log-level', 'warn']);
      const answer = await fetch(`${origin}/v1/shipments`, {
        headers: { authorization: `Bearer ${DEFAULT_KEY}` },
      });
      expect(answer.status).toBe(200);
      await stop();
      expect(lines).toEqual([expect.stringContaining('"ready":true')]);
    },
    SPAWNS,
  );
});

describe('a readable log line', () => {
  const base = { level: 30, time: '2026-11-22T08:00:00.000Z', account: 'acct_1' };

  it('says a request in one line', () => {
    expect(
      formatLine({
        ...base,
        msg: 'request',
        method: 'POST',
        path: '/v1/labels',
        status: 201,
        duration_ms: 3.2,
      }),
    ).toBe('POST /v1/labels 201 3.2 ms  acct_1');
    const refused = { ...base, msg: 'request', method: 'POST', path: '/v1/labels', duration_ms: 1.5 };
    expect(formatLine({ ...refused, status: 422, code: 'invalid_field', field: 'format' })).toBe(
      'POST /v1/labels 422 invalid_field (format) 1.5 ms  acct_1',
    );
    expect(formatLine({ ...refused, status: 404, code: 'not_found' })).toBe(
      'POST /v1/labels 404 not_found 1.5 ms  acct_1',
    );
  });

  it('says a step and a delivery in one line', () => {
    expect(
      formatLine({
        ...base,
        msg: 'step',
        id: 'job_1',
        kind: 'tracking.step',
        subject: 'lbl_1',
        due_at: '2026-11-22T09:00:00Z',
        tracking_number: '9400',
        status: 'in_transit',
      }),
    ).toBe('step tracking.step lbl_1 in_transit 9400  acct_1');
    const delivery = {
      ...base,
      msg: 'delivery',
      webhook: 'wh_1',
      delivery: 'dlv_1',
      event: 'label.generated',
      event_id: 'evt_1',
      attempt: 0,
      duration_ms: 12,
    };
    expect(formatLine({ ...delivery, outcome: 'succeeded', response_status: 200, error: null })).toBe(
      'delivery label.generated evt_1 -> wh_1 try 0 succeeded 200 12 ms  acct_1',
    );
    expect(formatLine({ ...delivery, outcome: 'failed', response_status: null, error: 'timeout' })).toBe(
      'delivery label.generated evt_1 -> wh_1 try 0 failed timeout 12 ms  acct_1',
    );
  });

  it('keeps any other line to its message and its fields', () => {
    expect(
      formatLine({ level: 30, time: 't', msg: 'shutting down', signal: 'SIGTERM', graceMs: 10000 }),
    ).toBe('shutting down signal=SIGTERM graceMs=10000');
  });
});

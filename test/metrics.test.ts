import { beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { SANDBOX_VERSION } from '../src/core/version.js';
import { SandboxMetrics } from '../src/metrics/metrics.js';
import { TEST_ENGINE } from './databases.js';
import { createTestSandbox, DEFAULT_KEY, expectError, type TestSandbox } from './helpers.js';
import { closedPortUrl, startReceiver } from './receiver.js';

/**
 * `GET /metrics`: Prometheus' text format, one registry per sandbox, route templates rather than
 * paths, webhook outcomes, the scheduler's lag, the database's connections, and who may read it.
 */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The exposition format 0.0.4, strictly enough to refuse a malformed line: samples, and each family's TYPE. */
function parseExposition(text: string) {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const helped = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment) {
      const [, kind, name = '', rest = ''] = comment;
      if (kind === 'TYPE') {
        expect(types.has(name), `a second TYPE for ${name}`).toBe(false);
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped']).toContain(rest);
        types.set(name, rest);
      } else helped.add(name);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(sample, `not a sample line: ${line}`).not.toBeNull();
    const [, name = '', labelText = '', value = ''] = sample ?? [];
    const labels: Record<string, string> = {};
    for (const [, label = '', quoted = ''] of labelText.matchAll(
      /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g,
    ))
      labels[label] = quoted;
    samples.push({ name, labels, value: Number(value) });
  }
  for (const name of types.keys()) expect(helped, name).toContain(name);
  return { samples, types };
}

async function scrape(sandbox: TestSandbox, headers: Record<string, string> = {}) {
  const response = await sandbox.call('GET', '/metrics', { key: null, headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return { ...parseExposition(response.text), text: response.text, response };
}

/** The value of one series (0 when absent, as Prometheus reads a counter not yet seen). */
const seriesValue = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);

let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await createTestSandbox({ replicaId: 'web-7.pod_a:1' });
});

describe('GET /metrics', () => {
  it('counts requests by method, route template and status, and times them, naming no id or key', async () => {
    const before = (await scrape(sandbox)).samples;
    const shipment = await sandbox.newShipment();
    await sandbox.call('GET', `/v1/shipments/${shipment.id}`);
    await sandbox.call('GET', '/v1/shipments/shp_00000000000000000000000000');
    await sandbox.call('GET', `/v1/shipments/${shipment.id}`, { key: null });
    await sandbox.call('GET', '/v2/shipments');
    await sandbox.call('PUT', '/v1/shipments');
    const { samples, types, text } = await scrape(sandbox);

    const counted = (method: string, route: string, status: string) =>
      seriesValue(samples, 'http_requests_total', { method, route, status }) -
      seriesValue(before, 'http_requests_total', { method, route, status });
    expect(types.get('http_requests_total')).toBe('counter');
    expect(types.get('http_request_duration_seconds')).toBe('histogram');
    expect(counted('POST', '/v1/shipments', '201')).toBe(1);
    expect(counted('GET', '/v1/shipments/:id', '200')).toBe(1);
    expect(counted('GET', '/v1/shipments/:id', '404')).toBe(1);
    // Refused before its route ran (no key): still counted under the route's template.
    expect(counted('GET', '/v1/shipments/:id', '401')).toBe(1);
    expect(counted('GET', 'unmatched', '404')).toBe(1);
    expect(counted('PUT', 'unmatched', '405')).toBe(1);
    // The scrape before this one counted itself once it had answered.
    expect(counted('GET', '/metrics', '200')).toBe(1);

    const timed = { method: 'GET', route: '/v1/shipments/:id' };
    const count = seriesValue(samples, 'http_request_duration_seconds_count', timed);
    expect(count).toBe(seriesValue(samples, 'http_requests_total', timed));
    expect(seriesValue(samples, 'http_request_duration_seconds_bucket', { ...timed, le: '+Inf' })).toBe(
      count,
    );
    expect(seriesValue(samples, 'http_request_duration_seconds_sum', timed)).toBeGreaterThan(0);
    // The duration has no status: one series a route, whatever it answered.
    expect(samples.filter((s) => s.name.startsWith('http_request_duration') && 'status' in s.labels)).toEqual(
      [],
    );

    // No tenant data: ids, keys and account ids never appear, whatever route was called.
    for (const secret of [shipment.id, DEFAULT_KEY, DEFAULT_ACCOUNT.id, 'shp_000000'])
      expect(text).not.toContain(secret);
    const routes = new Set(samples.filter((s) => s.labels.route).map((s) => s.labels.route));
    // Templates are lower case, ids are not (`shp_01J…`).
    for (const route of routes) expect(route).toMatch(/^(\/[a-z0-9_.-]*|\/:[a-z_]+)+$|^unmatched$/);
  });

  it('says which sandbox it is, and carries the process metrics once', async () => {
    const { samples, types } = await scrape(sandbox);
    expect(samples.filter((s) => s.name === 'sandbox_info')).toEqual([
      {
        name: 'sandbox_info',
        labels: { version: SANDBOX_VERSION, engine: TEST_ENGINE, replica: 'web-7.pod_a:1' },
        value: 1,
      },
    ]);
    expect(types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    expect(types.get('nodejs_gc_duration_seconds')).toBe('histogram');
  });

  it('says whether the sandbox keeps what it reads, as it does alone in its database', async () => {
    await vi.waitFor(() => expect(sandbox.database.memory.granted).toBe(true));
    const { samples, types } = await scrape(sandbox);
    expect(types.get('sandbox_keeps_reads')).toBe('gauge');
    expect(seriesValue(samples, 'sandbox_keeps_reads', {})).toBe(1);
  });

  it("reports the database's connections at the scrape", async () => {
    const { samples } = await scrape(sandbox);
    const state = (name: string) => seriesValue(samples, 'db_pool_connections', { state: name });
    if (TEST_ENGINE === 'sqlite')
      expect([state('total'), state('idle'), state('waiting')]).toEqual([1, 1, 0]);
    else {
      // The pool has opened connections for the requests before, and nothing waits for one now.
      expect(state('total')).toBeGreaterThanOrEqual(1);
      expect(state('idle')).toBeLessThanOrEqual(state('total'));
      expect(state('waiting')).toBe(0);
    }
  });

  it('counts webhook attempts by outcome', async () => {
    const key = await sandbox.newAccount();
    await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });
    const ok = await startReceiver([200]);
    const failing = await startReceiver([500]);
    try {
      const before = (await scrape(sandbox)).samples;
      for (const url of [ok.url, failing.url, await closedPortUrl()]) {
        const hook = await sandbox.call('POST', '/v1/webhooks', {
          key,
          body: { url, events: ['shipment.created'], secret: 'whsec_metrics_test_secret' },
        });
        expect(hook.status).toBe(201);
      }
      await sandbox.newShipment({}, key);
      expect((await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by: 0 } })).status).toBe(
        200,
      );
      const { samples, types } = await scrape(sandbox);
      expect(types.get('webhook_attempts_total')).toBe('counter');
      const counted = (outcome: string) =>
        seriesValue(samples, 'webhook_attempts_total', { outcome }) -
        seriesValue(before, 'webhook_attempts_total', { outcome });
      expect(['delivered', 'http_error', 'connection_error', 'timeout'].map(counted)).toEqual([1, 1, 1, 0]);
      // Every outcome is there from the start, at 0 until it happens.
      expect(
        samples
          .filter((s) => s.name === 'webhook_attempts_total')
          .map((s) => s.labels.outcome)
          .sort(),
      ).toEqual([
        'connection_error',
        'delivered',
        'destination_not_allowed',
        'http_error',
        'other',
        'timeout',
      ]);
    } finally {
      await Promise.all([ok.close(), failing.close()]);
    }
  });

  it("measures how late the background timer starts due work, in real seconds at the clock's speed", async () => {
    const { scheduler, wall, db } = sandbox;
    const kind = 'test.metrics-lag';
    scheduler.register(kind, async () => undefined);
    // Due 10 s from now on the default account's running clock (speed 1); the timer next looks 70 s later.
    await scheduler.schedule(db, {
      accountId: DEFAULT_ACCOUNT.id,
      kind,
      subject: 'late',
      payload: {},
      dueAt: wall.now + 10_000,
      now: wall.now,
    });
    wall.now += 70_000;
    await scheduler.start();
    await scheduler.stop();
    const { samples, types } = await scrape(sandbox);
    expect(types.get('scheduler_lag_seconds')).toBe('histogram');
    expect(seriesValue(samples, 'scheduler_lag_seconds_count')).toBe(1);
    expect(seriesValue(samples, 'scheduler_lag_seconds_sum')).toBeCloseTo(60, 3);
    expect(seriesValue(samples, 'scheduler_lag_seconds_bucket', { le: '30' })).toBe(0);
    expect(seriesValue(samples, 'scheduler_lag_seconds_bucket', { le: '60' })).toBe(1);
  });

  it('is not /v1: no rate-limit headers, and the request journal does not see it', async () => {
    const { response } = await scrape(sandbox);
    expect(response.headers.get('x-ratelimit-limit')).toBeNull();
    const journal = await sandbox.call('GET', '/_sandbox/requests');
    expect(journal.status).toBe(200);
    expect((journal.json.data as { path: string }[]).map((entry) => entry.path)).not.toContain('/metrics');
  });

  it('keeps each sandbox of a process apart', async () => {
    const other = await createTestSandbox();
    await other.call('GET', '/healthz', { key: null });
    await other.call('GET', '/healthz', { key: null });
    const theirs = (await scrape(other)).samples;
    expect(seriesValue(theirs, 'http_requests_total', { route: '/healthz' })).toBe(2);
    expect(seriesValue(theirs, 'http_requests_total', { route: '/v1/shipments' })).toBe(0);
  });
});

describe('GET /metrics with --admin-token', () => {
  const TOKEN = 'metrics-admin-token-1';
  let shared: TestSandbox;
  beforeAll(async () => {
    shared = await createTestSandbox({ adminToken: TOKEN });
  });

  it('takes the admin token as a Bearer token, and nothing else', async () => {
    const anonymous = await shared.call('GET', '/metrics', { key: null });
    expectError(anonymous, 401, 'missing_api_key');
    expect(anonymous.json.error.message).toMatch(/\/metrics/);
    expectError(await shared.call('GET', '/metrics', { key: 'not-the-token' }), 401, 'invalid_api_key');
    // An account's API key is no admin token.
    const account = await shared.call('POST', '/_sandbox/accounts', {
      key: null,
      headers: { authorization: `Bearer ${TOKEN}` },
      body: {},
    });
    expectError(await shared.call('GET', '/metrics', { key: account.json.api_key }), 401, 'invalid_api_key');
    const { samples } = await scrape(shared, { authorization: `Bearer ${TOKEN}` });
    expect(seriesValue(samples, 'http_requests_total', { route: '/metrics', status: '401' })).toBe(3);
  });
});

describe('SandboxMetrics', () => {
  const metrics = () =>
    new SandboxMetrics({
      version: '1.0.0',
      engine: 'sqlite',
      replica: 'r',
      connections: () => ({ total: 1, idle: 1, waiting: 0 }),
      keepsReads: () => true,
    });
  const samplesOf = async (m: SandboxMetrics) => parseExposition(await m.scrape()).samples;

  it('converts lateness on a fast clock to real seconds, and skips what says nothing of real time', async () => {
    const m = metrics();
    m.schedulerLag({ speed: 3600, frozen: false }, 3_600_000);
    m.schedulerLag({ speed: 1, frozen: true }, 5_000);
    m.schedulerLag({ speed: 1, frozen: false }, Number.POSITIVE_INFINITY);
    const samples = await samplesOf(m);
    expect(seriesValue(samples, 'scheduler_lag_seconds_count')).toBe(1);
    expect(seriesValue(samples, 'scheduler_lag_seconds_sum')).toBe(1);
  });

  it('times requests into cumulative buckets, a bound itself in its bucket, and escapes labels', async () => {
    const m = metrics();
    for (const seconds of [0.0005, 0.0007, 0.3, 20]) m.request('GET', '/v1/a', 200, seconds);
    m.request('GET', 'a "quoted" \\ route', 200, 0.001);
    const samples = await samplesOf(m);
    const bucket = (le: string) =>
      seriesValue(samples, 'http_request_duration_seconds_bucket', { route: '/v1/a', le });
    expect([
      bucket('0.0005'),
      bucket('0.001'),
      bucket('0.25'),
      bucket('0.5'),
      bucket('10'),
      bucket('+Inf'),
    ]).toEqual([1, 2, 2, 3, 3, 4]);
    expect(seriesValue(samples, 'http_request_duration_seconds_count', { route: '/v1/a' })).toBe(4);
    expect(seriesValue(samples, 'http_request_duration_seconds_sum', { route: '/v1/a' })).toBeCloseTo(
      20.3012,
    );
    const escaped = samples.filter(
      (s) => s.name === 'http_request_duration_seconds_count' && s.labels.route !== '/v1/a',
    );
    expect(escaped.map((s) => [s.labels.route, s.value])).toEqual([['a \\"quoted\\" \\\\ route', 1]]);
  });

  it('bounds its labels: unknown methods and failure kinds fall into other', async () => {
    const m = metrics();
    m.request('PROPFIND', 'unmatched', 405, 0.001);
    m.webhookAttempt({ ok: false, error: 'something new' });
    m.webhookAttempt({ ok: false, error: 'destination_not_allowed' });
    const samples = await samplesOf(m);
    expect(
      seriesValue(samples, 'http_requests_total', { method: 'other', route: 'unmatched', status: '405' }),
    ).toBe(1);
    expect(seriesValue(samples, 'webhook_attempts_total', { outcome: 'other' })).toBe(1);
    expect(seriesValue(samples, 'webhook_attempts_total', { outcome: 'destination_not_allowed' })).toBe(1);
  });
});

import { describe, expect, it, vi } from 'vitest';
import { TEST_ENGINE } from './databases.js';
import { createTestSandbox, DEFAULT_KEY, expectError, type TestSandbox } from './helpers.js';

/** A fresh account on `plan` with a frozen clock at the start of a minute; returns its key. */
async function account(sandbox: TestSandbox, plan: string) {
  const key = await sandbox.newAccount(plan);
  await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });
  return key;
}

const headersOf = (response: { headers: Headers }) => ({
  limit: response.headers.get('x-ratelimit-limit'),
  remaining: response.headers.get('x-ratelimit-remaining'),
  reset: response.headers.get('x-ratelimit-reset'),
});

// The test wall clock stands at 2026-11-22T08:00:00Z, the start of a minute and of an hour.
const MINUTE_END = String(Date.UTC(2026, 10, 22, 8, 1) / 1000);
const DAY_END = String(Date.UTC(2026, 10, 23) / 1000);

describe('rate limits', () => {
  it('stops a key at its 121st request in a minute, counting down, and resets a minute later', async () => {
    const sandbox = await createTestSandbox();
    const key = await account(sandbox, 'enterprise');
    for (let i = 1; i <= 120; i++) {
      const response = await sandbox.call('GET', '/v1/shipments', { key });
      expect(response.status).toBe(200);
      expect(headersOf(response)).toEqual({ limit: '120', remaining: String(120 - i), reset: MINUTE_END });
    }
    const refused = await sandbox.call('GET', '/v1/shipments', { key });
    expectError(refused, 429, 'rate_limit_exceeded');
    expect(refused.json.error.message).toContain('per-key limit of 120');
    expect(headersOf(refused)).toEqual({ limit: '120', remaining: '0', reset: MINUTE_END });
    expect(refused.headers.get('retry-after')).toBe('60');

    await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by: '1m' } });
    const next = await sandbox.call('GET', '/v1/shipments', { key });
    expect(next.status).toBe(200);
    expect(headersOf(next).remaining).toBe('119');
  });

  it("applies the starter plan's 60 a minute across the account's keys", async () => {
    const sandbox = await createTestSandbox();
    const first = await account(sandbox, 'starter');
    const second = (await sandbox.call('POST', '/_sandbox/keys', { key: first, body: { name: 'second' } }))
      .json.value;
    for (let i = 0; i < 30; i++)
      expect((await sandbox.call('GET', '/v1/shipments', { key: first })).status).toBe(200);
    for (let i = 0; i < 29; i++)
      expect((await sandbox.call('GET', '/v1/shipments', { key: second })).status).toBe(200);
    const last = await sandbox.call('GET', '/v1/shipments', { key: second });
    expect(headersOf(last)).toEqual({ limit: '60', remaining: '0', reset: MINUTE_END });
    const refused = await sandbox.call('GET', '/v1/shipments', { key: first });
    expectError(refused, 429, 'rate_limit_exceeded');
    expect(refused.json.error.message).toContain('starter plan');
  });

  // 5,000 requests: over PostgreSQL, each a few round trips.
  it("applies the starter plan's 5,000 a day, reset at the end of the UTC day", {
    timeout: 60_000,
  }, async () => {
    const sandbox = await createTestSandbox();
    const key = await account(sandbox, 'starter');
    // Spread over minutes so that only the day ceiling is reached; each minute's requests at once (over
    // PostgreSQL a request waits on round trips, which overlap).
    for (let minute = 0; minute < 84; minute++) {
      const count = minute === 83 ? 20 : 60;
      const answers = await Promise.all(
        Array.from({ length: count }, () => sandbox.call('GET', '/v1/shipments', { key })),
      );
      expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
      await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by: '1m' } });
    }
    const refused = await sandbox.call('GET', '/v1/shipments', { key });
    expectError(refused, 429, 'rate_limit_exceeded');
    expect(refused.json.error.message).toContain('5,000 requests a day');
    expect(headersOf(refused)).toEqual({ limit: '5000', remaining: '0', reset: DAY_END });

    await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { to: '2026-11-23T00:00:00Z' } });
    expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
  });

  it('shows the ceiling with the fewest requests left on every authenticated answer, errors included', async () => {
    const sandbox = await createTestSandbox();
    const key = await account(sandbox, 'growth');
    const ok = await sandbox.call('GET', '/v1/shipments', { key });
    expect(headersOf(ok)).toEqual({ limit: '120', remaining: '119', reset: MINUTE_END });
    const notFound = await sandbox.call('GET', '/v1/shipments/shp_nope', { key });
    expect(notFound.status).toBe(404);
    expect(headersOf(notFound)).toEqual({ limit: '120', remaining: '118', reset: MINUTE_END });
    const invalid = await sandbox.call('POST', '/v1/shipments', { key, body: {} });
    expect(invalid.status).toBe(422);
    expect(headersOf(invalid).remaining).toBe('117');
    // Unauthenticated answers and the sandbox's own routes are neither limited nor counted.
    const anonymous = await sandbox.call('GET', '/v1/shipments', { key: null });
    expect(anonymous.headers.get('x-ratelimit-limit')).toBeNull();
    const control = await sandbox.call('GET', '/_sandbox/clock', { key });
    expect(control.headers.get('x-ratelimit-limit')).toBeNull();
    expect(headersOf(await sandbox.call('GET', '/v1/shipments', { key })).remaining).toBe('116');
  });

  it('never overshoots under concurrent requests', async () => {
    const sandbox = await createTestSandbox();
    const key = await account(sandbox, 'enterprise');
    const responses = await Promise.all(
      Array.from({ length: 150 }, () => sandbox.call('GET', '/v1/shipments?limit=1', { key })),
    );
    expect(responses.filter((r) => r.status === 200)).toHaveLength(120);
    expect(responses.filter((r) => r.status === 429)).toHaveLength(30);
    const remaining = responses
      .filter((r) => r.status === 200)
      .map((r) => Number(r.headers.get('x-ratelimit-remaining')));
    expect(new Set(remaining).size).toBe(120);
  });

  it('can be switched off per account, and the plan changed', async () => {
    const sandbox = await createTestSandbox();
    const key = await account(sandbox, 'starter');
    const off = await sandbox.call('POST', '/_sandbox/account', {
      key,
      body: { rate_limits: false, plan: 'enterprise' },
    });
    expect(off.json).toMatchObject({ plan: 'enterprise', rate_limits: false });
    for (let i = 0; i < 130; i++)
      expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
    const last = await sandbox.call('GET', '/v1/shipments', { key });
    expect(headersOf(last)).toEqual({ limit: '120', remaining: '0', reset: MINUTE_END });
    await sandbox.call('POST', '/_sandbox/account', { key, body: { rate_limits: true } });
    expectError(await sandbox.call('GET', '/v1/shipments', { key }), 429, 'rate_limit_exceeded');
    expectError(
      await sandbox.call('POST', '/_sandbox/account', { key, body: { plan: 'gold' } }),
      422,
      'invalid_field',
      'plan',
    );
    expectError(
      await sandbox.call('POST', '/_sandbox/account', { key, body: { rate_limits: 'no' } }),
      422,
      'invalid_field',
      'rate_limits',
    );
  });

  it('can be switched off for the whole server', async () => {
    const sandbox = await createTestSandbox({ noRateLimits: true });
    for (let i = 0; i < 125; i++)
      expect((await sandbox.call('GET', '/v1/shipments', { key: DEFAULT_KEY })).status).toBe(200);
  });

  it.runIf(TEST_ENGINE === 'postgres')(
    'keeps counting with limits off through a write of the counts that failed, and decides on them once on',
    async () => {
      const sandbox = await createTestSandbox();
      const key = await account(sandbox, 'starter');
      await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });
      expect(
        (await sandbox.call('POST', '/_sandbox/account', { key, body: { rate_limits: false } })).status,
      ).toBe(200);
      const signature = 'rate_add(text[], bigint[], bigint[], integer[], bigint)';
      await sandbox.db.run(`ALTER FUNCTION ${signature} RENAME TO rate_add_away`);
      for (let i = 0; i < 3; i++)
        expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
      await vi.waitFor(() =>
        expect(
          sandbox.logLines.some((line) =>
            String(line.msg).startsWith('rate-limit counts could not be written'),
          ),
        ).toBe(true),
      );
      await sandbox.db.run(
        'ALTER FUNCTION rate_add_away(text[], bigint[], bigint[], integer[], bigint) RENAME TO rate_add',
      );

      expect(
        (await sandbox.call('POST', '/_sandbox/account', { key, body: { rate_limits: true } })).status,
      ).toBe(200);
      const counted = await sandbox.call('GET', '/v1/shipments', { key });
      expect(counted.status).toBe(200);
      // The three made while limits were off, and this one: 60 a minute on the starter plan.
      expect(counted.headers.get('x-ratelimit-remaining')).toBe('56');
    },
  );

  it('tells a client on a clock slowed to a crawl to wait a year at most, in whole seconds', async () => {
    const sandbox = await createTestSandbox();
    const key = await account(sandbox, 'enterprise');
    await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: false, speed: 5e-324 } });
    for (let i = 0; i < 120; i++) await sandbox.call('GET', '/v1/shipments', { key });
    const refused = await sandbox.call('GET', '/v1/shipments', { key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe(String(366 * 24 * 3600));
  });

  it('tells a client on a fast clock to wait in real seconds', async () => {
    const sandbox = await createTestSandbox();
    const key = await account(sandbox, 'enterprise');
    await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: false, speed: 60 } });
    for (let i = 0; i < 120; i++) await sandbox.call('GET', '/v1/shipments', { key });
    const refused = await sandbox.call('GET', '/v1/shipments', { key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
  });
});

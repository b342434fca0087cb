import { describe, expect, it } from 'vitest';
import { createTestSandbox, expectError, shipmentRequest } from './helpers.js';

const END_OF_TIME = '9999-12-31T23:59:59Z';

describe("bounds on the account clock's controls", () => {
  it.each([
    [{ by: 1e15 }],
    [{ by: 1e308 }],
    [{ by: '99999999d' }],
    [{ by: 3650 * 86_400 + 1 }],
    [{ by: '3651d' }],
  ])('refuses %j with 422 invalid_field by, and the clock keeps working', async (body) => {
    const sandbox = await createTestSandbox();
    const before = (await sandbox.call('GET', '/_sandbox/clock')).json;
    expectError(await sandbox.call('POST', '/_sandbox/clock/advance', { body }), 422, 'invalid_field', 'by');
    expect((await sandbox.call('GET', '/_sandbox/clock')).json).toEqual(before);
    const moved = await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '1d' } });
    expect(moved.status).toBe(200);
    expect((await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);
  });

  it('moves ten years at a time up to the end of time, and not a second past it', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    const moved = await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '3650d' } });
    expect(moved.json.now).toBe('2036-11-19T08:00:00Z');
    // Ten years by an instant too: one day more is refused, and the clock stays.
    expectError(
      await sandbox.call('POST', '/_sandbox/clock/advance', { body: { to: '2046-11-18T08:00:00Z' } }),
      422,
      'invalid_field',
      'to',
    );
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe('2036-11-19T08:00:00Z');
    expect(
      (await sandbox.call('POST', '/_sandbox/clock/advance', { body: { to: '2046-11-17T08:00:00Z' } })).json
        .now,
    ).toBe('2046-11-17T08:00:00Z');
    // The rest of the way at a million times real time, then frozen there.
    await sandbox.call('POST', '/_sandbox/clock', { body: { speed: 1_000_000, frozen: false } });
    sandbox.wall.now += 400 * 86_400_000;
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    expectError(
      await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 1 } }),
      422,
      'invalid_field',
      'by',
    );
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe(END_OF_TIME);
    // At the end of time the account still works, and no timestamp it writes has more than four year digits.
    const shipment = await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() });
    expect(shipment.json.created_at).toBe(END_OF_TIME);
    const label = await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.json.id } });
    expect(label.json.expires_at).toBe(END_OF_TIME);
    const voided = await sandbox.call('DELETE', `/v1/labels/${label.json.id}`);
    expect(voided.json.refund.estimated_at).toBe(END_OF_TIME);
    expect(JSON.stringify((await sandbox.call('GET', '/_sandbox/events')).json)).not.toMatch(/[+-]0\d{5}-/);
  });

  it('stops a running clock at the end of time, whatever its speed', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { speed: 1_000_000 } });
    sandbox.wall.now += 400 * 86_400_000; // 400 real days at a million times: far past the year 9999
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe(END_OF_TIME);
    expect((await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() })).json.created_at).toBe(
      END_OF_TIME,
    );
  });

  it('refuses a `to` past the year 9999 as 422 invalid_field to', async () => {
    const sandbox = await createTestSandbox();
    for (const to of ['+010000-01-01T00:00:00Z', '10000-01-01T00:00:00Z', '275760-09-13T00:00:00Z']) {
      expectError(
        await sandbox.call('POST', '/_sandbox/clock/advance', { body: { to } }),
        422,
        'invalid_field',
        'to',
      );
    }
  });

  it('counts both of two advances `by` made at once', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    // A label gives the advances steps to run, so the first is still running when the second arrives.
    const shipment = await sandbox.newShipment();
    await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } });
    const answers = await Promise.all([
      sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '6h' } }),
      sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '6h' } }),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.map((answer) => answer.json.now).sort()).toEqual([
      '2026-11-22T14:00:00Z',
      '2026-11-22T20:00:00Z',
    ]);
    expect((await sandbox.call('GET', '/_sandbox/clock')).json.now).toBe('2026-11-22T20:00:00Z');
  });
});

describe('rate limits on a frozen clock', () => {
  it('end their window in real time, so Retry-After comes true, and still reset when the clock moves', async () => {
    const sandbox = await createTestSandbox();
    const key = await sandbox.newAccount('starter');
    await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });
    await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by: 30 } });
    // The frozen clock stands at 08:00:30: its minute has 30 seconds left.
    for (let i = 0; i < 60; i++)
      expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
    const refused = await sandbox.call('GET', '/v1/shipments', { key });
    expectError(refused, 429, 'rate_limit_exceeded');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBe(30);
    // Waiting as told is enough, though the clock has not moved.
    sandbox.wall.now += (retryAfter - 1) * 1000;
    expectError(await sandbox.call('GET', '/v1/shipments', { key }), 429, 'rate_limit_exceeded');
    sandbox.wall.now += 1000;
    expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
    expect((await sandbox.call('GET', '/_sandbox/clock', { key })).json).toMatchObject({
      now: '2026-11-22T08:00:30Z',
      frozen: true,
    });
    // Moving the frozen clock on starts a new window too.
    for (let i = 0; i < 59; i++) await sandbox.call('GET', '/v1/shipments', { key });
    expectError(await sandbox.call('GET', '/v1/shipments', { key }), 429, 'rate_limit_exceeded');
    await sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by: '1m' } });
    expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
  });
});

describe('numbers past what SQLite holds', () => {
  it.each([
    [
      '/v1/shipments',
      shipmentRequest({ parcel: { weight: 1e300, length: 1, width: 1, height: 1 } }),
      'parcel.weight',
    ],
    [
      '/v1/shipments',
      shipmentRequest({ parcel: { weight: 2 ** 63, length: 1, width: 1, height: 1 } }),
      'parcel.weight',
    ],
    ['/_sandbox/faults', { path: '/v1/shipments', status: 503, times: 1e300 }, 'times'],
    ['/_sandbox/faults', { path: '/v1/shipments', delay_ms: 1e300 }, 'delay_ms'],
    ['/_sandbox/faults', { path: '/v1/shipments', status: 503, retry_after: 2 ** 64 }, 'retry_after'],
    ['/_sandbox/faults', { path: '/v1/shipments', status: 1e300 }, 'status'],
    ['/_sandbox/clock', { speed: 1e300 }, 'speed'],
    ['/_sandbox/account', { webhook_retry_schedule: [1e300] }, 'webhook_retry_schedule.0'],
    ['/_sandbox/account', { webhook_retry_schedule: ['10s', '99999999d'] }, 'webhook_retry_schedule.1'],
    ['/_sandbox/account', { webhook_retry_schedule: [0.5] }, 'webhook_retry_schedule.0'],
    ['/_sandbox/account', { webhook_retry_schedule: [-60] }, 'webhook_retry_schedule.0'],
  ])('are refused as 422 at %s: %j', async (path, body, field) => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('POST', path, { body }), 422, 'invalid_field', field);
    // Nothing was stored, and the account goes on.
    expect(await sandbox.db.value('SELECT count(*) FROM shipments')).toBe(0);
    expect(await sandbox.db.value('SELECT count(*) FROM faults')).toBe(0);
    expect((await sandbox.call('GET', '/_sandbox/account')).json.webhook_retry_schedule).toEqual([
      60, 300, 1800, 7200, 28800,
    ]);
  });

  it('takes an empty retry ladder as no retries, and up to twenty delays', async () => {
    const sandbox = await createTestSandbox();
    const none = await sandbox.call('POST', '/_sandbox/account', { body: { webhook_retry_schedule: [] } });
    expect(none.json.webhook_retry_schedule).toEqual([]);
    const twenty = Array.from({ length: 20 }, (_, i) => `${i + 1}s`);
    const set = await sandbox.call('POST', '/_sandbox/account', { body: { webhook_retry_schedule: twenty } });
    expect(set.json.webhook_retry_schedule).toHaveLength(20);
    expectError(
      await sandbox.call('POST', '/_sandbox/account', {
        body: { webhook_retry_schedule: [...twenty, '21s'] },
      }),
      422,
      'invalid_field',
      'webhook_retry_schedule',
    );
  });
});

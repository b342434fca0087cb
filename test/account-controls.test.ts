import { describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { startServer } from '../src/server.js';
import { createTestSandbox, DEFAULT_KEY, expectError, shipmentRequest } from './helpers.js';
import { startReceiver } from './receiver.js';

describe('/_sandbox/keys', () => {
  it('creates a key shown once, lists it by its last four characters, and revokes it at once', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    const created = await sandbox.call('POST', '/_sandbox/keys', {
      body: { name: 'CI', scopes: ['shipments:read'] },
    });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({
      id: expect.stringMatching(/^key_/),
      name: 'CI',
      scopes: ['shipments:read'],
      created_at: '2026-11-22T08:00:00Z',
      value: expect.stringMatching(/^svc_test_[0-9a-f]{32}$/),
    });
    const { id, value } = created.json;
    expect((await sandbox.call('GET', '/v1/shipments', { key: value })).status).toBe(200);
    expectError(
      await sandbox.call('POST', '/v1/shipments', { key: value, body: shipmentRequest() }),
      403,
      'insufficient_scope',
    );

    const listed = await sandbox.call('GET', '/_sandbox/keys');
    expect(listed.text).not.toContain(value);
    const entry = listed.json.data.find((key: { id: string }) => key.id === id);
    expect(entry).toEqual({
      id,
      name: 'CI',
      scopes: ['shipments:read'],
      created_at: '2026-11-22T08:00:00Z',
      last_used_at: '2026-11-22T08:00:00Z',
      last4: value.slice(-4),
      revoked_at: null,
    });

    const revoked = await sandbox.call('DELETE', `/_sandbox/keys/${id}`);
    expect(revoked.json).toEqual({ id, revoked_at: '2026-11-22T08:00:00Z' });
    expectError(await sandbox.call('GET', '/v1/shipments', { key: value }), 401, 'invalid_api_key');
    expect(
      (await sandbox.call('GET', '/_sandbox/keys')).json.data.find((k: { id: string }) => k.id === id)
        .revoked_at,
    ).toBe('2026-11-22T08:00:00Z');
  });

  it('defaults to every scope and refuses bad input', async () => {
    const sandbox = await createTestSandbox();
    const all = await sandbox.call('POST', '/_sandbox/keys', { body: { name: 'all' } });
    expect(all.json.scopes).toEqual([
      'shipments:read',
      'shipments:write',
      'rates:read',
      'orders:read',
      'billing:read',
    ]);
    expectError(await sandbox.call('POST', '/_sandbox/keys', { body: {} }), 422, 'missing_field', 'name');
    expectError(
      await sandbox.call('POST', '/_sandbox/keys', { body: { name: 'x', scopes: ['admin'] } }),
      422,
      'invalid_field',
      'scopes.0',
    );
    expectError(
      await sandbox.call('POST', '/_sandbox/keys', { body: { name: 'x', scopes: [] } }),
      422,
      'invalid_field',
      'scopes',
    );
    expectError(await sandbox.call('DELETE', '/_sandbox/keys/key_nope'), 404, 'not_found');
    const other = await sandbox.newAccount();
    expectError(
      await sandbox.call('DELETE', `/_sandbox/keys/${all.json.id}`, { key: other }),
      404,
      'not_found',
    );
    expect((await sandbox.call('GET', '/v1/shipments', { key: all.json.value })).status).toBe(200);
  });
});

describe('the admin token', () => {
  it('guards account creation when configured', async () => {
    const sandbox = await createTestSandbox({ adminToken: 'shared-secret-token' });
    expectError(
      await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: {} }),
      401,
      'missing_api_key',
    );
    expectError(
      await sandbox.call('POST', '/_sandbox/accounts', {
        key: null,
        body: {},
        headers: { authorization: 'Bearer wrong-token-value' },
      }),
      401,
      'invalid_api_key',
    );
    const created = await sandbox.call('POST', '/_sandbox/accounts', {
      key: null,
      body: { plan: 'starter' },
      headers: { authorization: 'Bearer shared-secret-token' },
    });
    expect(created.status).toBe(201);
    expect((await sandbox.call('GET', '/v1/shipments', { key: created.json.api_key })).status).toBe(200);
  });
});

describe('/_sandbox/faults', () => {
  it('answers a chosen status and code for the next N matching requests', async () => {
    const sandbox = await createTestSandbox();
    const rule = await sandbox.call('POST', '/_sandbox/faults', {
      body: { method: 'GET', path: '/shipments*', status: 503, times: 2 },
    });
    expect(rule.status).toBe(201);
    expect(rule.json).toMatchObject({
      method: 'GET',
      path: '/v1/shipments*',
      status: 503,
      code: 'service_unavailable',
      times: 2,
      remaining: 2,
    });
    for (let i = 0; i < 2; i++) {
      const failed = await sandbox.call('GET', '/v1/shipments');
      expectError(failed, 503, 'service_unavailable');
      expect(failed.headers.get('retry-after')).toBe('1');
    }
    expect((await sandbox.call('GET', '/v1/shipments')).status).toBe(200);
    expect((await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);
    expect((await sandbox.call('GET', '/_sandbox/faults')).json.data[0]).toMatchObject({
      id: rule.json.id,
      remaining: 0,
    });
  });

  it('answers 500 and 429 with Retry-After until removed', async () => {
    const sandbox = await createTestSandbox();
    const boom = (
      await sandbox.call('POST', '/_sandbox/faults', { body: { path: '/v1/rates', status: 500 } })
    ).json;
    const slow = (
      await sandbox.call('POST', '/_sandbox/faults', {
        body: { path: '/v1/tracking/*', status: 429, retry_after: 7 },
      })
    ).json;
    expect(boom.code).toBe('internal_error');
    for (let i = 0; i < 3; i++)
      expectError(await sandbox.call('POST', '/v1/rates', { body: {} }), 500, 'internal_error');
    const limited = await sandbox.call('GET', '/v1/tracking/9400100000000000000150');
    expectError(limited, 429, 'rate_limit_exceeded');
    expect(limited.headers.get('retry-after')).toBe('7');

    expect((await sandbox.call('DELETE', `/_sandbox/faults/${boom.id}`)).json).toEqual({
      id: boom.id,
      deleted: true,
    });
    expectError(await sandbox.call('POST', '/v1/rates', { body: {} }), 422, 'missing_field', 'from');
    await sandbox.call('DELETE', '/_sandbox/faults');
    expect((await sandbox.call('GET', '/v1/tracking/9400100000000000000150')).status).toBe(200);
    expect((await sandbox.call('GET', '/_sandbox/faults')).json.data).toEqual([]);
    expectError(await sandbox.call('DELETE', `/_sandbox/faults/${slow.id}`), 404, 'not_found');
  });

  it('uses a custom code and touches only its own account', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/faults', {
      body: { path: '/v1/shipments', status: 502, code: 'carrier_unavailable' },
    });
    expectError(await sandbox.call('GET', '/v1/shipments'), 502, 'carrier_unavailable');
    const other = await sandbox.newAccount();
    expect((await sandbox.call('GET', '/v1/shipments', { key: other })).status).toBe(200);
  });

  it.each([
    [{}, 'missing_field', 'path'],
    [{ path: '/v1/shipments' }, 'missing_field', 'status'],
    [{ path: 'shipments', status: 500 }, 'invalid_field', 'path'],
    [{ path: '/v1/*/x', status: 500 }, 'invalid_field', 'path'],
    [{ path: '/v1/shipments', status: 200 }, 'invalid_field', 'status'],
    [{ path: '/v1/shipments', status: 700 }, 'invalid_field', 'status'],
    [{ path: '/v1/shipments', drop: true, status: 500 }, 'invalid_field', 'drop'],
    [{ path: '/v1/shipments', code: 'x_y' }, 'missing_field', 'status'],
    [{ path: '/v1/shipments', delay_ms: 10, code: 'x_y' }, 'invalid_field', 'code'],
    [{ path: '/v1/shipments', status: 500, code: 'Bad Code' }, 'invalid_field', 'code'],
    [{ path: '/v1/shipments', delay_ms: -1 }, 'invalid_field', 'delay_ms'],
    [{ path: '/v1/shipments', delay_ms: 60_001 }, 'invalid_field', 'delay_ms'],
    [{ path: '/v1/shipments', status: 500, times: 0 }, 'invalid_field', 'times'],
    [{ path: '/v1/shipments', status: 500, method: 'TRACE' }, 'invalid_field', 'method'],
    [{ path: '/v1/shipments', status: 500, colour: 'red' }, 'invalid_field', 'colour'],
  ])('refuses %j', async (body, code, field) => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('POST', '/_sandbox/faults', { body }), 422, code, field);
    expect((await sandbox.call('GET', '/_sandbox/faults')).json.data).toEqual([]);
  });

  it('adds latency and drops connections on a real socket', async () => {
    const sandbox = await startServer(testConfig());
    try {
      const call = (path: string, init: RequestInit = {}) =>
        fetch(`${sandbox.origin}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
        });
      await call('/_sandbox/faults', {
        method: 'POST',
        body: JSON.stringify({ path: '/v1/shipments', drop: true, times: 1 }),
      });
      await expect(call('/v1/shipments')).rejects.toThrow();
      expect((await call('/v1/shipments')).status).toBe(200);

      await call('/_sandbox/faults', {
        method: 'POST',
        body: JSON.stringify({ path: '/v1/shipments', delay_ms: 250, times: 1 }),
      });
      const started = performance.now();
      const delayed = await call('/v1/shipments');
      expect(delayed.status).toBe(200);
      // The delay is the fault's own effect, so its lower bound is the behaviour under test.
      expect(performance.now() - started).toBeGreaterThanOrEqual(240);

      const journal = (await (await call('/_sandbox/requests')).json()) as {
        data: { path: string; status: number }[];
      };
      // Newest first: the delayed request, the one after the drop, the dropped one (status 0).
      expect(journal.data.slice(0, 3).map((entry) => entry.status)).toEqual([200, 200, 0]);
    } finally {
      await sandbox.close();
    }
  });
});

describe('/_sandbox/requests', () => {
  it('journals what the client really sent, newest first', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    await sandbox.call('GET', '/v1/shipments?limit=5&status=created');
    await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() });
    await sandbox.call('GET', '/v1/shipments/shp_missing');
    await sandbox.call('GET', '/v1/shipments', { key: null });
    const journal = await sandbox.call('GET', '/_sandbox/requests');
    expect(journal.json.data.map((e: any) => [e.method, e.path, e.query, e.status, e.at])).toEqual([
      ['GET', '/v1/shipments/shp_missing', '', 404, '2026-11-22T08:00:00Z'],
      ['POST', '/v1/shipments', '', 201, '2026-11-22T08:00:00Z'],
      ['GET', '/v1/shipments', 'limit=5&status=created', 200, '2026-11-22T08:00:00Z'],
    ]);
    expect(journal.json.data.every((e: any) => typeof e.duration_ms === 'number' && e.duration_ms >= 0)).toBe(
      true,
    );
    expect((await sandbox.call('GET', '/_sandbox/requests?limit=1')).json.data).toHaveLength(1);
    expectError(await sandbox.call('GET', '/_sandbox/requests?limit=0'), 400, 'invalid_parameter', 'limit');
    const other = await sandbox.newAccount();
    expect((await sandbox.call('GET', '/_sandbox/requests', { key: other })).json.data).toEqual([]);
  });
});

describe('/_sandbox/reset', () => {
  it('empties the account but its keys, resets its clock, and leaves other accounts alone', async () => {
    const sandbox = await createTestSandbox();
    const receiver = await startReceiver([500]);
    try {
      const other = await sandbox.newAccount();
      await sandbox.newShipment({}, other);

      await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
      await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '3d' } });
      const shipment = await sandbox.newShipment();
      await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } });
      await sandbox.call('POST', '/v1/webhooks', {
        body: { url: receiver.url, events: ['shipment.created'], secret: 'a-secret-of-16-chars' },
      });
      await sandbox.newShipment();
      await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '1d' } });
      await sandbox.call('POST', '/_sandbox/faults', { body: { path: '/v1/rates', status: 500 } });
      const extraKey = (await sandbox.call('POST', '/_sandbox/keys', { body: { name: 'kept' } })).json.value;

      const reset = await sandbox.call('POST', '/_sandbox/reset');
      expect(reset.json).toEqual({ reset: true });

      expect((await sandbox.call('GET', '/v1/shipments')).json.meta.total).toBe(0);
      expect((await sandbox.call('GET', '/v1/webhooks')).json.data).toEqual([]);
      expect((await sandbox.call('GET', '/_sandbox/events')).json.data).toEqual([]);
      expect((await sandbox.call('GET', '/_sandbox/faults')).json.data).toEqual([]);
      expect((await sandbox.call('GET', '/_sandbox/emails')).json.data).toEqual([]);
      // The journal starts again with the two API calls made since the reset.
      expect((await sandbox.call('GET', '/_sandbox/requests')).json.data).toHaveLength(2);
      expect((await sandbox.call('GET', '/_sandbox/clock')).json).toEqual({
        now: '2026-11-22T08:00:00Z',
        speed: 1,
        frozen: false,
      });
      const { account } = (await sandbox.stores.accounts.findByKey(sandbox.db, DEFAULT_KEY))!;
      expect(
        await sandbox.db.get('SELECT count(*) AS n FROM jobs WHERE account_id = ?', [account.id]),
      ).toEqual({
        n: 0,
      });
      expectError(await sandbox.call('GET', `/v1/shipments/${shipment.id}`), 404, 'not_found');
      expect((await sandbox.call('GET', '/v1/shipments', { key: extraKey })).status).toBe(200);
      expect((await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);

      expect((await sandbox.call('GET', '/v1/shipments', { key: other })).json.meta.total).toBe(1);
    } finally {
      await receiver.close();
    }
  });
  it('waits for an advance of the account in progress, and an advance waits for it', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
    for (let round = 0; round < 3; round++) {
      // Each label plans its tracking steps: the advance runs them while the reset deletes them.
      for (let i = 0; i < 8; i++) {
        const shipment = await sandbox.newShipment();
        await sandbox.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } });
      }
      const [advanced, reset] = await Promise.all([
        sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '30d' } }),
        sandbox.call('POST', '/_sandbox/reset'),
      ]);
      expect([advanced.status, advanced.json]).toEqual([200, expect.anything()]);
      expect(reset.json).toEqual({ reset: true });
      expect((await sandbox.call('GET', '/v1/shipments')).json.meta.total).toBe(0);
    }
  });
});

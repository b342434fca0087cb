import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import type { Scope } from '../src/core/actor.js';
import { newId } from '../src/core/ids.js';
import { createTestSandbox, DEFAULT_KEY, expectError, shipmentRequest, type TestSandbox } from './helpers.js';

const ACCOUNT_ID = /^acct_[0-9A-HJKMNP-TV-Z]{26}$/;
const TEST_KEY = /^svc_test_[0-9a-f]{32}$/;
const START = '2026-11-22T08:00:00Z';

const RATES_REQUEST = {
  from: shipmentRequest().from,
  to: shipmentRequest().to,
  parcel: shipmentRequest().parcel,
};

/** A new key of the default account limited to `scopes`; returns its value. */
async function restrictedKey(sandbox: TestSandbox, scopes: Scope[]): Promise<string> {
  const value = `svc_test_${randomBytes(16).toString('hex')}`;
  await sandbox.stores.accounts.insertApiKey(
    sandbox.db,
    {
      id: newId('key', sandbox.wall.now),
      accountId: DEFAULT_ACCOUNT.id,
      name: `only ${scopes.join(' ')}`,
      scopes,
      createdAt: sandbox.wall.now,
    },
    value,
  );
  return value;
}

async function createShipment(sandbox: TestSandbox, key: string = DEFAULT_KEY): Promise<string> {
  const response = await sandbox.call('POST', '/v1/shipments', { key, body: shipmentRequest() });
  expect(response.status, response.text).toBe(201);
  return response.json.id as string;
}

describe('authentication', () => {
  it('answers 401 missing_api_key without an Authorization header', async () => {
    const sandbox = await createTestSandbox();
    for (const [method, path] of [
      ['GET', '/v1/shipments'],
      ['POST', '/v1/shipments'],
      ['GET', '/v1/shipments/shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2'],
      ['DELETE', '/v1/shipments/shp_01JD3S5Z7QK2N8W4X6Y9A0B1C2'],
      ['POST', '/v1/rates'],
    ] as const) {
      expectError(await sandbox.call(method, path, { key: null }), 401, 'missing_api_key');
    }
  });

  it('answers 401 missing_api_key for another scheme or an empty bearer', async () => {
    const sandbox = await createTestSandbox();
    const basic = Buffer.from(`${DEFAULT_KEY}:`).toString('base64');
    for (const authorization of [
      `Basic ${basic}`,
      DEFAULT_KEY,
      'Bearer',
      'Bearer ',
      `Token ${DEFAULT_KEY}`,
    ]) {
      const response = await sandbox.call('GET', '/v1/shipments', { key: null, headers: { authorization } });
      expectError(response, 401, 'missing_api_key');
    }
  });

  it('accepts the bearer scheme in any case', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/v1/shipments', {
      key: null,
      headers: { authorization: `bearer ${DEFAULT_KEY}` },
    });
    expect(response.status).toBe(200);
  });

  it.each([
    ['a malformed key', 'svc_test_x'],
    ['a key without prefix', 'DefaultSandboxKey000000000000000'],
    ['a key with a bad character', 'svc_test_DefaultSandboxKey00000000000000!'],
    ['an unknown well-formed key', `svc_test_${'0'.repeat(32)}`],
    ['the default key with one character changed', `${DEFAULT_KEY.slice(0, -1)}1`],
  ])('answers 401 invalid_api_key for %s', async (_name, key) => {
    const sandbox = await createTestSandbox();
    expectError(await sandbox.call('GET', '/v1/shipments', { key }), 401, 'invalid_api_key');
  });

  it('answers 401 invalid_api_key to a live key, saying that the sandbox takes test keys', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('GET', '/v1/shipments', { key: `svc_live_${'a1'.repeat(16)}` });
    const error = expectError(response, 401, 'invalid_api_key');
    expect(error.message).toMatch(/test key/i);
    expect(error.message).toContain('svc_test_');
  });

  it('answers 401 invalid_api_key to a revoked key from the next request on', async () => {
    const sandbox = await createTestSandbox();
    const key = await restrictedKey(sandbox, ['shipments:read', 'shipments:write']);
    expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);

    const other = (await sandbox.stores.accounts.keys(sandbox.db, DEFAULT_ACCOUNT.id)).find(
      (k) => k.id !== DEFAULT_ACCOUNT.api_key.id,
    );
    const revoked = await sandbox.stores.accounts.revokeKey(
      sandbox.db,
      DEFAULT_ACCOUNT.id,
      other!.id,
      sandbox.wall.now,
    );
    expect(revoked?.revokedAt).toBe(sandbox.wall.now);

    expectError(await sandbox.call('GET', '/v1/shipments', { key }), 401, 'invalid_api_key');
    const write = await sandbox.call('POST', '/v1/shipments', { key, body: shipmentRequest() });
    expectError(write, 401, 'invalid_api_key');
    expectError(await sandbox.call('GET', '/_sandbox/clock', { key }), 401, 'invalid_api_key');
    // The account's other key still works, and the rejected request stored nothing.
    const list = await sandbox.call('GET', '/v1/shipments');
    expect([list.status, list.json.meta.total]).toEqual([200, 0]);
  });

  it('answers 401 invalid_api_key to the default key once it is revoked', async () => {
    const sandbox = await createTestSandbox();
    await createShipment(sandbox);
    await sandbox.stores.accounts.revokeKey(
      sandbox.db,
      DEFAULT_ACCOUNT.id,
      DEFAULT_ACCOUNT.api_key.id,
      sandbox.wall.now,
    );
    expectError(await sandbox.call('GET', '/v1/shipments'), 401, 'invalid_api_key');
  });

  it('stores keys hashed: no column of any row holds a key value', async () => {
    const sandbox = await createTestSandbox();
    const created = await sandbox.newAccount();
    const restricted = await restrictedKey(sandbox, ['rates:read']);
    const rows = await sandbox.db.all<Record<string, unknown>>('SELECT * FROM api_keys');
    expect(rows).toHaveLength(3);

    const cells = rows.flatMap((row) => Object.values(row).map(String));
    for (const key of [DEFAULT_KEY, created, restricted]) {
      const secret = key.slice('svc_test_'.length);
      for (const cell of cells) {
        expect(cell).not.toContain(key);
        expect(cell).not.toContain(secret);
      }
    }
    // And every key still authenticates, so the hash is what is compared.
    for (const key of [DEFAULT_KEY, created]) {
      expect((await sandbox.call('GET', '/v1/shipments', { key })).status).toBe(200);
    }
  });
});

describe('scopes', () => {
  it('lets a shipments:read key read but not write', async () => {
    const sandbox = await createTestSandbox();
    const id = await createShipment(sandbox);
    const key = await restrictedKey(sandbox, ['shipments:read']);

    const listed = await sandbox.call('GET', '/v1/shipments', { key });
    expect([listed.status, listed.json.meta.total]).toEqual([200, 1]);
    expect((await sandbox.call('GET', `/v1/shipments/${id}`, { key })).status).toBe(200);

    const created = await sandbox.call('POST', '/v1/shipments', { key, body: shipmentRequest() });
    expect(expectError(created, 403, 'insufficient_scope').message).toContain('shipments:write');

    const cancelled = await sandbox.call('DELETE', `/v1/shipments/${id}`, { key });
    expect(expectError(cancelled, 403, 'insufficient_scope').message).toContain('shipments:write');

    const rates = await sandbox.call('POST', '/v1/rates', { key, body: RATES_REQUEST });
    expect(expectError(rates, 403, 'insufficient_scope').message).toContain('rates:read');

    // Nothing was written by the refused requests.
    const after = await sandbox.call('GET', `/v1/shipments/${id}`);
    expect(after.json.status).toBe('created');
    expect((await sandbox.call('GET', '/v1/shipments', { key })).json.meta.total).toBe(1);
  });

  it('checks the scope before the body: an invalid body from a read-only key is still 403', async () => {
    const sandbox = await createTestSandbox();
    const key = await restrictedKey(sandbox, ['shipments:read']);
    const response = await sandbox.call('POST', '/v1/shipments', { key, body: { parcel: 'none' } });
    expectError(response, 403, 'insufficient_scope');
  });

  it('lets a rates:read key compare rates but not read shipments', async () => {
    const sandbox = await createTestSandbox();
    const id = await createShipment(sandbox);
    const key = await restrictedKey(sandbox, ['rates:read']);

    const rates = await sandbox.call('POST', '/v1/rates', { key, body: RATES_REQUEST });
    expect(rates.status).toBe(200);
    expect(rates.json.data.length).toBeGreaterThan(0);

    const listed = await sandbox.call('GET', '/v1/shipments', { key });
    expect(expectError(listed, 403, 'insufficient_scope').message).toContain('shipments:read');
    const read = await sandbox.call('GET', `/v1/shipments/${id}`, { key });
    expect(expectError(read, 403, 'insufficient_scope').message).toContain('shipments:read');
  });

  it('lets a shipments:write key create and cancel but not read', async () => {
    const sandbox = await createTestSandbox();
    const key = await restrictedKey(sandbox, ['shipments:write']);

    const created = await sandbox.call('POST', '/v1/shipments', { key, body: shipmentRequest() });
    expect(created.status).toBe(201);
    const cancelled = await sandbox.call('DELETE', `/v1/shipments/${created.json.id}`, { key });
    expect(cancelled.status).toBe(200);

    const read = await sandbox.call('GET', `/v1/shipments/${created.json.id}`, { key });
    expect(expectError(read, 403, 'insufficient_scope').message).toContain('shipments:read');
  });

  it('gives a key without the API scopes 403 on every API route', async () => {
    const sandbox = await createTestSandbox();
    const key = await restrictedKey(sandbox, ['orders:read', 'billing:read']);
    for (const [method, path, body] of [
      ['GET', '/v1/shipments', undefined],
      ['POST', '/v1/shipments', shipmentRequest()],
      ['POST', '/v1/rates', RATES_REQUEST],
    ] as const) {
      expectError(await sandbox.call(method, path, { key, body }), 403, 'insufficient_scope');
    }
  });

  it("applies the API's scopes to the sandbox controls (the contract's table; every route in sandbox-scopes)", async () => {
    const sandbox = await createTestSandbox();
    const rates = await restrictedKey(sandbox, ['rates:read']);
    expectError(await sandbox.call('GET', '/_sandbox/clock', { key: rates }), 403, 'insufficient_scope');
    const reader = await restrictedKey(sandbox, ['shipments:read']);
    const clock = await sandbox.call('GET', '/_sandbox/clock', { key: reader });
    expect(clock.status).toBe(200);
    expect(clock.json).toEqual({ now: START, speed: 1, frozen: false });
  });
});

describe('/_sandbox authentication and accounts', () => {
  it('needs a key for the sandbox controls', async () => {
    const sandbox = await createTestSandbox();
    for (const [method, path, body] of [
      ['GET', '/_sandbox/clock', undefined],
      ['POST', '/_sandbox/clock', { frozen: true }],
      ['POST', '/_sandbox/clock/advance', { by: '1h' }],
      ['GET', '/_sandbox/events', undefined],
      ['GET', '/_sandbox/accounts', undefined],
    ] as const) {
      expectError(await sandbox.call(method, path, { key: null, body }), 401, 'missing_api_key');
    }
    expectError(await sandbox.call('GET', '/_sandbox/clock', { key: 'svc_test_x' }), 401, 'invalid_api_key');
    // The refused clock change did not happen.
    expect((await sandbox.call('GET', '/_sandbox/clock')).json).toEqual({
      now: START,
      speed: 1,
      frozen: false,
    });
  });

  it.each(['starter', 'growth', 'enterprise'])('creates a %s account without a key', async (plan) => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/accounts', {
      key: null,
      body: { name: 'Acme Widgets', plan },
    });
    expect(response.status).toBe(201);
    expect(response.json).toEqual({
      id: expect.stringMatching(ACCOUNT_ID),
      name: 'Acme Widgets',
      plan,
      created_at: START,
      api_key: expect.stringMatching(TEST_KEY),
    });
  });

  it('defaults the plan to growth and names the account', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: {} });
    expect(response.status).toBe(201);
    expect(response.json.plan).toBe('growth');
    expect(typeof response.json.name).toBe('string');
    expect(response.json.name.length).toBeGreaterThan(0);
  });

  it('creates an account from a request without a body', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/accounts', { key: null });
    expect([response.status, response.json.plan]).toEqual([201, 'growth']);
  });

  it('gives each account its own id and key', async () => {
    const sandbox = await createTestSandbox();
    const a = await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: {} });
    const b = await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: {} });
    expect(a.json.id).not.toBe(b.json.id);
    expect(a.json.api_key).not.toBe(b.json.api_key);
  });

  it('answers 422 invalid_field plan to an unknown plan', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/accounts', {
      key: null,
      body: { plan: 'platinum' },
    });
    expectError(response, 422, 'invalid_field', 'plan');
  });

  it('answers 422 invalid_field to an unknown field', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: { owner: 'me' } });
    expectError(response, 422, 'invalid_field', 'owner');
  });

  it('answers 422 invalid_field name to an empty name', async () => {
    const sandbox = await createTestSandbox();
    const response = await sandbox.call('POST', '/_sandbox/accounts', { key: null, body: { name: ' ' } });
    expectError(response, 422, 'invalid_field', 'name');
  });

  it("gives a key that works and sees none of the default account's shipments", async () => {
    const sandbox = await createTestSandbox();
    await createShipment(sandbox);
    await createShipment(sandbox);
    const key = await sandbox.newAccount('starter');

    const empty = await sandbox.call('GET', '/v1/shipments', { key });
    expect(empty.status).toBe(200);
    expect(empty.json).toEqual({ data: [], meta: { total: 0, cursor: null, has_more: false } });
    expect((await sandbox.call('GET', '/_sandbox/events', { key })).json).toEqual({ data: [] });

    const id = await createShipment(sandbox, key);
    const own = await sandbox.call('GET', '/v1/shipments', { key });
    expect(own.json.data.map((s: { id: string }) => s.id)).toEqual([id]);
    expect((await sandbox.call('GET', '/v1/shipments')).json.meta.total).toBe(2);
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { eachYielding } from '../src/core/yielding.js';
import { createTestSandbox, expectError, type TestSandbox } from './helpers.js';

/**
 * The caps of a shared deployment: at most 100 webhooks, 100 fault rules in play, 100 active keys and
 * 20 open listen sessions an account, held under concurrent creations on either engine. One sandbox for the file; each test
 * makes accounts of its own.
 */
let sandbox: TestSandbox;
beforeAll(async () => {
  sandbox = await createTestSandbox();
});

const SECRET = 'whsec_0123456789abcdef';
const webhook = (i: number) => ({
  url: `http://127.0.0.1:9/hooks/${i}`,
  events: ['shipment.created'],
  secret: SECRET,
});
/** A rule on a path no test calls: it is in play, and it touches nothing. */
const fault = (i: number) => ({ path: `/v1/nowhere/${i}`, status: 503 });
const newKey = (i: number) => ({ name: `key ${i}` });

/** Creates `count` things at `path`, ten at a time, each answered 201. */
async function fill(key: string, path: string, body: (i: number) => object, count: number, from = 0) {
  for (let start = from; start < from + count; start += 10) {
    const batch = Array.from({ length: Math.min(10, from + count - start) }, (_, j) =>
      sandbox.call('POST', path, { key, body: body(start + j) }),
    );
    for (const answer of await Promise.all(batch)) expect(answer.status, answer.text).toBe(201);
  }
}

const count = async (sql: string, accountId: string) =>
  Number(await sandbox.db.value<number>(sql, [accountId]));

async function accountIdOf(key: string): Promise<string> {
  return (await sandbox.call('GET', '/_sandbox/account', { key })).json.id as string;
}

describe('at most 100 webhooks an account', () => {
  it('refuses the 101st with 422 limit_reached, on /v1 and its /_sandbox twin, until one is deleted', async () => {
    const key = await sandbox.newAccount();
    await fill(key, '/_sandbox/webhooks', webhook, 100);
    for (const path of ['/v1/webhooks', '/_sandbox/webhooks']) {
      const refused = expectError(
        await sandbox.call('POST', path, { key, body: webhook(100) }),
        422,
        'limit_reached',
      );
      expect(refused.message).toBe(
        'An account has at most 100 webhooks; delete one first. This one has 100.',
      );
    }
    // Another account is not held back by this one.
    expect((await sandbox.call('POST', '/v1/webhooks', { body: webhook(0) })).status).toBe(201);

    const { data } = (await sandbox.call('GET', '/v1/webhooks?limit=1', { key })).json;
    expect((await sandbox.call('DELETE', `/v1/webhooks/${data[0].id}`, { key })).status).toBe(200);
    expect((await sandbox.call('POST', '/v1/webhooks', { key, body: webhook(101) })).status).toBe(201);
    expectError(
      await sandbox.call('POST', '/v1/webhooks', { key, body: webhook(102) }),
      422,
      'limit_reached',
    );
    // Invalid input is refused for what it is, cap or not; a change of an existing webhook is no addition.
    expectError(
      await sandbox.call('POST', '/v1/webhooks', { key, body: { ...webhook(0), url: 'ftp://x' } }),
      422,
      'invalid_field',
      'url',
    );
    const last = (await sandbox.call('GET', '/v1/webhooks?limit=1', { key })).json.data[0];
    const patched = await sandbox.call('PATCH', `/v1/webhooks/${last.id}`, {
      key,
      body: { status: 'active' },
    });
    expect(patched.status).toBe(200);
  });

  it('holds when creations race at the cap: five at 98 make 100, not 103', async () => {
    const key = await sandbox.newAccount();
    await fill(key, '/_sandbox/webhooks', webhook, 98);
    const racing = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        sandbox.call('POST', i % 2 ? '/v1/webhooks' : '/_sandbox/webhooks', { key, body: webhook(200 + i) }),
      ),
    );
    expect(racing.map((answer) => answer.status).sort()).toEqual([201, 201, 422, 422, 422]);
    for (const answer of racing.filter((a) => a.status === 422)) expectError(answer, 422, 'limit_reached');
    const accountId = await accountIdOf(key);
    expect(
      await count('SELECT count(*) FROM webhooks WHERE account_id = ? AND deleted_at IS NULL', accountId),
    ).toBe(100);
  });

  it('keeps the webhooks of an account already past the cap, and refuses more until it is under', async () => {
    const key = await sandbox.newAccount();
    const accountId = await accountIdOf(key);
    // 102 registered before there was a cap, written as the store wrote them then.
    for (let i = 0; i < 102; i++) {
      await sandbox.stores.webhooks.insert(sandbox.db, {
        id: `wh_before${String(i).padStart(3, '0')}`,
        accountId,
        url: `http://127.0.0.1:9/old/${i}`,
        events: ['shipment.created'],
        secret: SECRET,
        status: 'active',
        createdAt: Date.UTC(2026, 0, 1) + i,
      });
    }
    expect((await sandbox.call('GET', '/v1/webhooks', { key })).json.meta.total).toBe(102);
    const refused = expectError(
      await sandbox.call('POST', '/v1/webhooks', { key, body: webhook(0) }),
      422,
      'limit_reached',
    );
    expect(refused.message).toContain('This one has 102.');
    for (const id of ['wh_before000', 'wh_before001'])
      expect((await sandbox.call('DELETE', `/v1/webhooks/${id}`, { key })).status).toBe(200);
    expectError(await sandbox.call('POST', '/v1/webhooks', { key, body: webhook(0) }), 422, 'limit_reached');
    expect((await sandbox.call('DELETE', '/v1/webhooks/wh_before002', { key })).status).toBe(200);
    expect((await sandbox.call('POST', '/v1/webhooks', { key, body: webhook(0) })).status).toBe(201);

    // An event still reaches every subscriber, the fan-out yielding between chunks.
    expect(
      (await sandbox.call('POST', '/_sandbox/events/trigger', { key, body: { event: 'shipment.created' } }))
        .status,
    ).toBe(201);
    expect(await count('SELECT count(*) FROM webhook_attempts WHERE account_id = ?', accountId)).toBe(100);
  });
});

describe('at most 100 fault rules in play an account', () => {
  it('refuses the 101st, and lets spent rules make room', async () => {
    const key = await sandbox.newAccount();
    await fill(key, '/_sandbox/faults', fault, 99);
    const once = await sandbox.call('POST', '/_sandbox/faults', {
      key,
      body: { path: '/v1/rates', method: 'POST', status: 500, times: 1 },
    });
    expect(once.status).toBe(201);
    const refused = expectError(
      await sandbox.call('POST', '/_sandbox/faults', { key, body: fault(100) }),
      422,
      'limit_reached',
    );
    expect(refused.message).toBe(
      'An account has at most 100 fault rules in play; delete one first. This one has 100.',
    );
    // The one-time rule plays once and is spent: it no longer stands in the way.
    expect((await sandbox.call('POST', '/v1/rates', { key, body: {} })).status).toBe(500);
    expect((await sandbox.call('POST', '/_sandbox/faults', { key, body: fault(100) })).status).toBe(201);
    const listed = (await sandbox.call('GET', '/_sandbox/faults?limit=100', { key })).json;
    expect(listed.meta).toEqual({ total: 100, cursor: null, has_more: false });
    expect(listed.data.map((rule: { id: string }) => rule.id)).not.toContain(once.json.id);
    expectError(
      await sandbox.call('POST', '/_sandbox/faults', { key, body: fault(101) }),
      422,
      'limit_reached',
    );
  });

  it('holds when creations race at the cap', async () => {
    const key = await sandbox.newAccount();
    await fill(key, '/_sandbox/faults', fault, 98);
    const racing = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        sandbox.call('POST', '/_sandbox/faults', { key, body: fault(200 + i) }),
      ),
    );
    expect(racing.map((answer) => answer.status).sort()).toEqual([201, 201, 422, 422, 422]);
    expect(await count('SELECT count(*) FROM faults WHERE account_id = ?', await accountIdOf(key))).toBe(100);
  });
});

describe('at most 100 active keys an account', () => {
  it('refuses the 101st active key; a revoked key makes room, and races hold', async () => {
    const key = await sandbox.newAccount();
    // The account's first key, and 97 more: two short of the cap.
    await fill(key, '/_sandbox/keys', newKey, 97);
    const racing = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        sandbox.call('POST', '/_sandbox/keys', { key, body: newKey(200 + i) }),
      ),
    );
    expect(racing.map((answer) => answer.status).sort()).toEqual([201, 201, 422, 422]);
    const refused = expectError(
      await sandbox.call('POST', '/_sandbox/keys', { key, body: newKey(300) }),
      422,
      'limit_reached',
    );
    expect(refused.message).toBe(
      'An account has at most 100 active keys; revoke one first. This one has 100.',
    );
    const made = racing.find((answer) => answer.status === 201)?.json;
    expect((await sandbox.call('DELETE', `/_sandbox/keys/${made.id}`, { key })).status).toBe(200);
    expect((await sandbox.call('POST', '/_sandbox/keys', { key, body: newKey(301) })).status).toBe(201);
  });
});

describe('at most 20 open listen sessions an account', () => {
  it('refuses the 21st, and races hold; sessions that end (a reset ends them all) make room', async () => {
    const key = await sandbox.newAccount();
    await fill(key, '/_sandbox/listeners', () => ({}), 18);
    const racing = await Promise.all(
      Array.from({ length: 4 }, () => sandbox.call('POST', '/_sandbox/listeners', { key, body: {} })),
    );
    expect(racing.map((answer) => answer.status).sort()).toEqual([201, 201, 422, 422]);
    const refused = expectError(
      await sandbox.call('POST', '/_sandbox/listeners', { key, body: {} }),
      422,
      'limit_reached',
    );
    expect(refused.message).toBe(
      'An account has at most 20 open listen sessions; stop the command of one first (its session ends 10 seconds after it disconnects). This one has 20.',
    );
    expect((await sandbox.call('POST', '/_sandbox/reset', { key })).status).toBe(200);
    expect((await sandbox.call('POST', '/_sandbox/listeners', { key, body: {} })).status).toBe(201);
  });
});

describe('the fan-out of an event', () => {
  it('lets the event loop turn between chunks', async () => {
    const order: (number | 'turn')[] = [];
    setImmediate(() => order.push('turn'));
    await eachYielding(
      Array.from({ length: 60 }, (_, i) => i),
      25,
      async (i) => {
        order.push(i);
      },
    );
    // Without the turns, a loop of settled promises runs to its end first.
    expect(order.indexOf('turn')).toBe(25);
    expect(order.filter((item) => item !== 'turn')).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it("writes an attempt for each of the account's 100 subscribers", async () => {
    const key = await sandbox.newAccount();
    await fill(key, '/_sandbox/webhooks', webhook, 100);
    await sandbox.newShipment({}, key);
    const accountId = await accountIdOf(key);
    const attempts = await sandbox.db.column<string>(
      'SELECT webhook_id FROM webhook_attempts WHERE account_id = ? ORDER BY seq',
      [accountId],
    );
    expect(new Set(attempts).size).toBe(100);
  });
});

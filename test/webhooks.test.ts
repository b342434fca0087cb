import { lookup } from 'node:dns/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verify } from '@octokit/webhooks-methods';
import { afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { openDatabase } from '../src/db/database.js';
import { postgresDatabase } from '../src/db/postgres.js';
import { sqliteDatabase } from '../src/db/sqlite.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import { systemResolver } from '../src/webhooks/dns.js';
import { signatureHeader } from '../src/webhooks/signature.js';
import { createSandbox } from '../src/wiring.js';
import { newPostgresSchema, TEST_ENGINE } from './databases.js';
import {
  capturingLogger,
  createTestSandbox,
  DEFAULT_KEY,
  expectError,
  shipmentRequest,
  type TestSandbox,
} from './helpers.js';
import { closedPortUrl, type Reply, startReceiver } from './receiver.js';

const SECRET = 'whsec_0123456789abcdef';
const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(replies: Reply[] = [200]) {
  const started = await startReceiver(replies);
  receivers.push(started);
  return started;
}

async function frozen(overrides = {}) {
  const sandbox = await createTestSandbox(overrides);
  await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
  return sandbox;
}

async function register(
  sandbox: TestSandbox,
  url: string,
  events: string[] = ['shipment.created'],
  key?: string,
) {
  const response = await sandbox.call('POST', '/v1/webhooks', { key, body: { url, events, secret: SECRET } });
  expect(response.status).toBe(201);
  return response.json as { id: string; status: string };
}

const advance = (sandbox: TestSandbox, by: string | number, key?: string) =>
  sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by } });

const attemptsOf = async (sandbox: TestSandbox, webhookId: string) =>
  (await sandbox.call('GET', `/_sandbox/webhooks/${webhookId}/deliveries`)).json.data as any[];

describe('signatures', () => {
  it("match GitHub's published test vector for this scheme", () => {
    expect(signatureHeader("It's a Secret to Everybody", 'Hello, World!')).toBe(
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
  });
});

describe('registration', () => {
  it('stores a webhook and never echoes its secret', async () => {
    const sandbox = await frozen();
    const created = await sandbox.call('POST', '/v1/webhooks', {
      body: { url: 'https://shop.example.com/hooks', events: ['tracking.delivered'], secret: SECRET },
    });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({
      id: expect.stringMatching(/^wh_[0-9A-HJKMNP-TV-Z]{26}$/),
      url: 'https://shop.example.com/hooks',
      events: ['tracking.delivered'],
      status: 'active',
      created_at: '2026-11-22T08:00:00Z',
    });
    expect(created.text).not.toContain(SECRET);
    const { id } = created.json;
    expect((await sandbox.call('GET', `/v1/webhooks/${id}`)).json).toEqual(created.json);
    expect((await sandbox.call('GET', '/v1/webhooks')).json).toEqual({
      data: [created.json],
      meta: { total: 1, cursor: null, has_more: false },
    });

    const patched = await sandbox.call('PATCH', `/v1/webhooks/${id}`, {
      body: { events: ['tracking.delivered', 'tracking.exception'], secret: 'another-long-secret-value' },
    });
    expect(patched.json.events).toEqual(['tracking.delivered', 'tracking.exception']);
    expect(patched.text).not.toContain('another-long-secret-value');

    expect((await sandbox.call('DELETE', `/v1/webhooks/${id}`)).json).toEqual({ id, deleted: true });
    expectError(await sandbox.call('GET', `/v1/webhooks/${id}`), 404, 'not_found');
    expect((await sandbox.call('GET', '/v1/webhooks')).json).toEqual({
      data: [],
      meta: { total: 0, cursor: null, has_more: false },
    });
  });

  it.each([
    [{ url: 'http://shop.example.com/hooks' }, 'invalid_field', 'url'],
    [{ url: 'ftp://shop.example.com/hooks' }, 'invalid_field', 'url'],
    [{ url: 'not a url' }, 'invalid_field', 'url'],
    [{ url: 'https://user:pw@shop.example.com/' }, 'invalid_field', 'url'],
    [{ events: [] }, 'invalid_field', 'events'],
    [{ events: ['shipment.exploded'] }, 'invalid_field', 'events.0'],
    [{ events: ['shipment.created', 'shipment.created'] }, 'invalid_field', 'events'],
    [{ events: 'shipment.created' }, 'invalid_field', 'events'],
    [{ secret: 'short' }, 'invalid_field', 'secret'],
    [{ secret: undefined }, 'missing_field', 'secret'],
    [{ url: undefined }, 'missing_field', 'url'],
    [{ colour: 'blue' }, 'invalid_field', 'colour'],
  ])('refuses %j', async (change, code, field) => {
    const sandbox = await createTestSandbox();
    const body = {
      url: 'https://shop.example.com/hooks',
      events: ['shipment.created'],
      secret: SECRET,
      ...change,
    };
    expectError(await sandbox.call('POST', '/v1/webhooks', { body }), 422, code, field);
    expect((await sandbox.call('GET', '/v1/webhooks')).json.data).toEqual([]);
  });

  it('takes plain http on loopback hosts, and anywhere with --allow-http-webhooks', async () => {
    const strict = await createTestSandbox();
    for (const url of ['http://localhost:9000/h', 'http://127.0.0.1/h', 'http://[::1]:8080/h']) {
      expect(
        (
          await strict.call('POST', '/v1/webhooks', {
            body: { url, events: ['label.voided'], secret: SECRET },
          })
        ).status,
      ).toBe(201);
    }
    const open = await createTestSandbox({ allowHttpWebhooks: true });
    const response = await open.call('POST', '/v1/webhooks', {
      body: { url: 'http://receiver.internal/h', events: ['label.voided'], secret: SECRET },
    });
    expect(response.status).toBe(201);
  });

  it('keeps webhooks to their account and checks scopes', async () => {
    const sandbox = await createTestSandbox();
    const hook = await register(sandbox, 'https://shop.example.com/hooks');
    const other = await sandbox.newAccount();
    expectError(await sandbox.call('GET', `/v1/webhooks/${hook.id}`, { key: other }), 404, 'not_found');
    expectError(
      await sandbox.call('PATCH', `/v1/webhooks/${hook.id}`, { key: other, body: { secret: SECRET } }),
      404,
      'not_found',
    );
    expectError(await sandbox.call('DELETE', `/v1/webhooks/${hook.id}`, { key: other }), 404, 'not_found');
    expect((await sandbox.call('GET', '/v1/webhooks', { key: other })).json.data).toEqual([]);

    const readOnly = 'svc_test_0123456789abcdef0123456789abcdef';
    await sandbox.stores.accounts.insertApiKey(
      sandbox.db,
      {
        id: 'key_01JSANDBXRE0D0NLYKEY000001',
        accountId: (await sandbox.stores.accounts.findByKey(sandbox.db, DEFAULT_KEY))!.account.id,
        name: 'ro',
        scopes: ['shipments:read'],
        createdAt: 0,
      },
      readOnly,
    );
    expect((await sandbox.call('GET', '/v1/webhooks', { key: readOnly })).status).toBe(200);
    expectError(
      await sandbox.call('POST', '/v1/webhooks', {
        key: readOnly,
        body: { url: 'https://a.test/h', events: ['label.voided'], secret: SECRET },
      }),
      403,
      'insufficient_scope',
    );
  });

  it('refuses an empty change and a status other than active or disabled', async () => {
    const sandbox = await createTestSandbox();
    const hook = await register(sandbox, 'https://shop.example.com/hooks');
    expectError(
      await sandbox.call('PATCH', `/v1/webhooks/${hook.id}`, { body: {} }),
      422,
      'missing_field',
      'url',
    );
    expectError(
      await sandbox.call('PATCH', `/v1/webhooks/${hook.id}`, { body: { status: 'failed' } }),
      422,
      'invalid_field',
      'status',
    );
  });

  it("registers, lists and deletes under /_sandbox for the sandbox's own tools, counting nowhere", async () => {
    const sandbox = await createTestSandbox();
    const account = await sandbox.newAccount();
    const reader = await sandbox.call('POST', '/_sandbox/keys', {
      key: account,
      body: { name: 'reader', scopes: ['shipments:read'] },
    });
    const made = await sandbox.call('POST', '/_sandbox/webhooks', {
      key: account,
      body: { url: 'https://shop.example.com/hooks', events: ['tracking.delivered'], secret: SECRET },
    });
    expect(made.status).toBe(201);
    expect(made.json).toEqual({
      id: expect.stringMatching(/^wh_/),
      url: 'https://shop.example.com/hooks',
      events: ['tracking.delivered'],
      status: 'active',
      created_at: expect.any(String),
    });
    // The same webhook as the API's, refused for the same reasons.
    expect((await sandbox.call('GET', `/v1/webhooks/${made.json.id}`, { key: account })).status).toBe(200);
    expectError(
      await sandbox.call('POST', '/_sandbox/webhooks', {
        key: account,
        body: { url: 'https://shop.example.com/hooks', events: [], secret: SECRET },
      }),
      422,
      'invalid_field',
      'events',
    );
    expectError(
      await sandbox.call('POST', '/_sandbox/webhooks', {
        key: reader.json.value,
        body: { url: 'https://shop.example.com/hooks', events: ['tracking.delivered'], secret: SECRET },
      }),
      403,
      'insufficient_scope',
    );
    const listed = await sandbox.call('GET', '/_sandbox/webhooks', { key: reader.json.value });
    expect(listed.json.data.map((w: { id: string }) => w.id)).toEqual([made.json.id]);
    expect(
      (await sandbox.call('DELETE', `/_sandbox/webhooks/${made.json.id}`, { key: account })).json,
    ).toEqual({ id: made.json.id, deleted: true });
    expectError(
      await sandbox.call('DELETE', `/_sandbox/webhooks/${made.json.id}`, { key: account }),
      404,
      'not_found',
    );
    expect((await sandbox.call('GET', '/_sandbox/webhooks', { key: account })).json.data).toEqual([]);
    // Only the API's own read was journaled (the report judges the merchant's client from the journal).
    const journal = (await sandbox.call('GET', '/_sandbox/requests', { key: account })).json.data;
    expect(journal.map((r: { method: string; path: string }) => `${r.method} ${r.path}`)).toEqual([
      `GET /v1/webhooks/${made.json.id}`,
    ]);
  });
});

describe('delivery', () => {
  it('posts the envelope, signed over the exact bytes, with the contract headers', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    await register(sandbox, target.url);
    const shipment = await sandbox.newShipment();
    expect(target.requests).toHaveLength(0);

    const advanced = await advance(sandbox, 0);
    expect(advanced.json.ran).toEqual([expect.objectContaining({ kind: 'webhook.attempt', attempt: 0 })]);
    expect(target.requests).toHaveLength(1);
    const [request] = target.requests;
    const body = request!.body.toString('utf8');
    expect(request!.method).toBe('POST');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(await verify(SECRET, body, request!.headers['service-signature'] as string)).toBe(true);
    expect(
      await verify('some-other-secret-value', body, request!.headers['service-signature'] as string),
    ).toBe(false);
    expect(request!.headers['service-delivery-attempt']).toBe('0');

    const envelope = JSON.parse(body);
    expect(Object.keys(envelope)).toEqual(['id', 'event', 'created_at', 'data']);
    expect(envelope).toMatchObject({
      event: 'shipment.created',
      created_at: '2026-11-22T08:00:00Z',
      data: shipment,
    });
    expect(request!.headers['service-event-id']).toBe(envelope.id);
  });

  it('signs with a secret holding a lone surrogate as Node encodes it, U+FFFD, on either engine', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const secret = 'whsec_0123456789\ud800';
    const response = await sandbox.call('POST', '/v1/webhooks', {
      body: { url: target.url, events: ['shipment.created'], secret },
    });
    expect(response.status).toBe(201);
    await sandbox.newShipment();
    await advance(sandbox, 0);
    const [request] = target.requests;
    const signature = request!.headers['service-signature'] as string;
    // The merchant's own code verifies with the secret it sent.
    expect(await verify(secret, request!.body.toString('utf8'), signature)).toBe(true);
  });

  it('delivers to a name under localhost as to localhost, never asking DNS', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const url = target.url.replace('127.0.0.1', 'hooks.localhost');
    const response = await sandbox.call('POST', '/v1/webhooks', {
      body: { url, events: ['shipment.created'], secret: SECRET },
    });
    expect(response.status).toBe(201);
    await sandbox.newShipment();
    await advance(sandbox, 0);
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]!.headers.host).toBe(new URL(url).host);
    expect(await systemResolver('Hooks.LOCALHOST.')).toEqual(await lookup('localhost', { all: true }));
  });

  it('sends only the events a webhook subscribes to, and keeps accounts apart', async () => {
    const sandbox = await frozen();
    const mine = await receiver();
    const theirs = await receiver();
    await register(sandbox, mine.url, ['shipment.cancelled']);
    const other = await sandbox.newAccount();
    await sandbox.call('POST', '/_sandbox/clock', { key: other, body: { frozen: true } });
    await register(sandbox, theirs.url, ['shipment.created', 'shipment.cancelled'], other);

    const shipment = await sandbox.newShipment();
    await sandbox.call('DELETE', `/v1/shipments/${shipment.id}`);
    await advance(sandbox, 0);
    expect(mine.requests.map((r) => JSON.parse(r.body.toString()).event)).toEqual(['shipment.cancelled']);
    await advance(sandbox, 0, other);
    expect(theirs.requests).toHaveLength(0);
  });

  it('retries on the ladder, re-sending the same bytes, then fails the webhook with one e-mail', async () => {
    const sandbox = await frozen();
    const target = await receiver([500]);
    const hook = await register(sandbox, target.url);
    await sandbox.newShipment();
    await advance(sandbox, 0);
    expect(target.requests).toHaveLength(1);

    const ladder = [60, 300, 1800, 7200, 28_800];
    for (const [index, seconds] of ladder.entries()) {
      await advance(sandbox, seconds - 1);
      expect(target.requests, `retry ${index + 1} one second early`).toHaveLength(index + 1);
      const fired = await advance(sandbox, 1);
      expect(target.requests, `retry ${index + 1} on time`).toHaveLength(index + 2);
      expect(fired.json.ran).toEqual([
        expect.objectContaining({ kind: 'webhook.attempt', attempt: index + 1 }),
      ]);
      expect(target.requests.at(-1)!.headers['service-delivery-attempt']).toBe(String(index + 1));
    }
    const bodies = new Set(target.requests.map((r) => r.body.toString('hex')));
    expect(bodies.size).toBe(1);

    expect((await sandbox.call('GET', `/v1/webhooks/${hook.id}`)).json.status).toBe('failed');
    const emails = (await sandbox.call('GET', '/_sandbox/emails')).json.data;
    expect(emails).toHaveLength(1);
    expect(emails[0].subject).toContain(hook.id);
    expect(emails[0].created_at).toBe('2026-11-22T18:36:00Z');

    const attempts = await attemptsOf(sandbox, hook.id);
    expect(attempts.map((a) => a.attempt)).toEqual([5, 4, 3, 2, 1, 0]);
    expect(attempts.map((a) => a.sent_at)).toEqual([
      '2026-11-22T18:36:00Z',
      '2026-11-22T10:36:00Z',
      '2026-11-22T08:36:00Z',
      '2026-11-22T08:06:00Z',
      '2026-11-22T08:01:00Z',
      '2026-11-22T08:00:00Z',
    ]);
    expect(attempts[5]).toMatchObject({
      status: 'failed',
      response_status: 500,
      response_excerpt: 'receiver says 500',
      error: 'http',
      scheduled_at: '2026-11-22T08:00:00Z',
      next_attempt_at: '2026-11-22T08:01:00Z',
    });
    expect(attempts[0]).toMatchObject({ status: 'failed', next_attempt_at: null });

    // A failed webhook gets nothing new, until it is set active again.
    await sandbox.newShipment();
    await advance(sandbox, '1d');
    expect(target.requests).toHaveLength(6);
    expect((await sandbox.call('GET', '/_sandbox/emails')).json.data).toHaveLength(1);

    target.reply([200]);
    const reactivated = await sandbox.call('PATCH', `/v1/webhooks/${hook.id}`, {
      body: { status: 'active' },
    });
    expect(reactivated.json.status).toBe('active');
    await sandbox.newShipment();
    await advance(sandbox, 0);
    expect(target.requests).toHaveLength(7);
    expect((await attemptsOf(sandbox, hook.id))[0]).toMatchObject({
      status: 'succeeded',
      response_status: 200,
      error: null,
    });
  });

  it('follows an account ladder set through /_sandbox/account', async () => {
    const sandbox = await frozen();
    const set = await sandbox.call('POST', '/_sandbox/account', {
      body: { webhook_retry_schedule: ['10s', 30] },
    });
    expect(set.json.webhook_retry_schedule).toEqual([10, 30]);
    const target = await receiver([503]);
    const hook = await register(sandbox, target.url);
    await sandbox.newShipment();
    await advance(sandbox, 40);
    expect(target.requests).toHaveLength(3);
    expect((await sandbox.call('GET', `/v1/webhooks/${hook.id}`)).json.status).toBe('failed');
    expectError(
      await sandbox.call('POST', '/_sandbox/account', { body: { webhook_retry_schedule: ['soon'] } }),
      422,
      'invalid_field',
      'webhook_retry_schedule.0',
    );
  });

  it('fails a webhook, and writes its e-mail, once when several sends fail for good at once', async () => {
    const sandbox = await frozen();
    expect(
      (await sandbox.call('POST', '/_sandbox/account', { body: { webhook_retry_schedule: [] } })).status,
    ).toBe(200);
    const target = await receiver(['hang']);
    const hook = await register(sandbox, target.url);
    for (let i = 0; i < 6; i++) await sandbox.newShipment();
    const advancing = advance(sandbox, 0);
    // Two sends on the wire at once, then both (and any after them) fail for good.
    while (target.requests.length < 2) await target.nextRequest();
    target.reply([503]);
    target.release(503);
    expect((await advancing).status).toBe(200);
    expect((await sandbox.call('GET', `/v1/webhooks/${hook.id}`)).json.status).toBe('failed');
    expect((await sandbox.call('GET', '/_sandbox/emails')).json.data).toHaveLength(1);
  });

  it('counts a receiver that does not answer in time as a timeout', async () => {
    const sandbox = await frozen({ webhookTimeoutMs: 150 });
    const target = await receiver(['hang']);
    const hook = await register(sandbox, target.url);
    await sandbox.newShipment();
    await advance(sandbox, 0);
    const attempts = await attemptsOf(sandbox, hook.id);
    expect(attempts.find((a) => a.attempt === 0)).toMatchObject({
      status: 'failed',
      error: 'timeout',
      response_status: null,
    });
    expect(attempts.find((a) => a.attempt === 1)).toMatchObject({
      status: 'scheduled',
      scheduled_at: '2026-11-22T08:01:00Z',
    });
  });

  it('keeps an answer holding a NUL or broken UTF-8 as U+FFFD, and retries as for any failure', async () => {
    const sandbox = await frozen();
    const body = Buffer.concat([Buffer.from('ok\0 '), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(' end')]);
    const target = await receiver([{ status: 500, body }, 200]);
    const hook = await register(sandbox, target.url);
    await sandbox.newShipment();
    await advance(sandbox, 0);
    const first = (await attemptsOf(sandbox, hook.id)).find((a) => a.attempt === 0);
    expect(first).toMatchObject({ status: 'failed', response_status: 500, error: 'http' });
    expect(first?.response_excerpt).toMatch(/^ok\uFFFD \uFFFD+ end$/);
    // The retry runs on time: nothing was left on the wire.
    await advance(sandbox, 60);
    expect(target.requests).toHaveLength(2);
    expect((await attemptsOf(sandbox, hook.id)).map((a) => a.status)).toEqual(['succeeded', 'failed']);
  });

  it('answers an advance whose send hangs once a stopping sandbox cuts it off, so the stop ends', async () => {
    const sandbox = await frozen();
    const target = await receiver(['hang']);
    await register(sandbox, target.url);
    await sandbox.newShipment();
    const advancing = advance(sandbox, 0);
    await target.nextRequest();
    await sandbox.stop();
    expect((await advancing).status).toBe(200);
  });

  it("holds 16 sends of a webhook whose receiver hangs, leaving the rest due, and the account's others go on", async () => {
    const EVENTS = 40;
    // Long enough that nothing times out while the test runs.
    const sandbox = await frozen({ webhookTimeoutMs: 120_000 });
    const stuck = await receiver(['hang']);
    const healthy = await receiver([204]);
    const stuckHook = await register(sandbox, stuck.url);
    const healthyHook = await register(sandbox, healthy.url);
    for (let i = 0; i < EVENTS; i++) await sandbox.newShipment();
    const reached = async (target: typeof healthy, count: number) => {
      while (target.requests.length < count) await target.nextRequest();
    };
    const statuses = async (webhookId: string) =>
      (await attemptsOf(sandbox, webhookId)).reduce<Record<string, number>>((counts, { status }) => {
        counts[status] = (counts[status] ?? 0) + 1;
        return counts;
      }, {});

    const advancing = advance(sandbox, 0);
    // Every healthy delivery goes out while the stuck receiver holds its four.
    await Promise.all([reached(stuck, 4), reached(healthy, EVENTS)]);
    expect(await statuses(stuckHook.id)).toEqual({ sending: 16, scheduled: EVENTS - 16 });
    expect(stuck.requests).toHaveLength(4);

    // Once it answers, the advance sends the rest and ends.
    stuck.reply([200]);
    stuck.release();
    expect((await advancing).status).toBe(200);
    expect(stuck.requests).toHaveLength(EVENTS);
    expect(await statuses(stuckHook.id)).toEqual({ succeeded: EVENTS });
    expect(await statuses(healthyHook.id)).toEqual({ succeeded: EVENTS });
  });

  it("sends a held-up webhook's backlog in the background once its receiver answers", async () => {
    const EVENTS = 40;
    const sandbox = await createTestSandbox({ webhookTimeoutMs: 120_000 });
    const target = await receiver(['hang']);
    const hook = await register(sandbox, target.url);
    await sandbox.start();
    for (let i = 0; i < EVENTS; i++) await sandbox.newShipment();
    while (target.requests.length < 4) await target.nextRequest();
    target.reply([200]);
    target.release();
    // No advance: the background timer takes the rest as the sends end.
    while (target.requests.length < EVENTS) await target.nextRequest();
    await expect
      .poll(async () => (await attemptsOf(sandbox, hook.id)).filter((a) => a.status === 'succeeded').length)
      .toBe(EVENTS);
  });

  it('counts a refused connection as a connection error', async () => {
    const sandbox = await frozen();
    const hook = await register(sandbox, await closedPortUrl());
    await sandbox.newShipment();
    await advance(sandbox, 0);
    const attempts = await attemptsOf(sandbox, hook.id);
    expect(attempts.find((a) => a.attempt === 0)).toMatchObject({
      status: 'failed',
      error: 'connection',
      next_attempt_at: '2026-11-22T08:01:00Z',
    });
  });
});

describe('inspection and test events', () => {
  it('redelivers the same bytes now as a new attempt', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const hook = await register(sandbox, target.url);
    await sandbox.newShipment();
    await advance(sandbox, 0);
    const [first] = await attemptsOf(sandbox, hook.id);
    await advance(sandbox, '1h');

    const again = await sandbox.call('POST', `/_sandbox/deliveries/${first.id}/redeliver`);
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({
      event_id: first.event_id,
      attempt: 1,
      redelivery: true,
      status: 'succeeded',
      sent_at: '2026-11-22T09:00:00Z',
    });
    expect(target.requests).toHaveLength(2);
    expect(target.requests[1]!.body.equals(target.requests[0]!.body)).toBe(true);
    expectError(await sandbox.call('POST', '/_sandbox/deliveries/dlv_nope/redeliver'), 404, 'not_found');
    const other = await sandbox.newAccount();
    expectError(
      await sandbox.call('POST', `/_sandbox/deliveries/${first.id}/redeliver`, { key: other }),
      404,
      'not_found',
    );
    expectError(
      await sandbox.call('GET', `/_sandbox/webhooks/${hook.id}/deliveries`, { key: other }),
      404,
      'not_found',
    );
  });

  it('triggers every event type with sample data', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const events = [
      'shipment.created',
      'shipment.cancelled',
      'label.generated',
      'label.voided',
      'tracking.updated',
      'tracking.delivered',
      'tracking.exception',
    ];
    await register(sandbox, target.url, events);
    for (const event of events) {
      const fired = await sandbox.call('POST', '/_sandbox/events/trigger', { body: { event } });
      expect(fired.status).toBe(201);
      expect(fired.json).toMatchObject({ event, created_at: '2026-11-22T08:00:00Z' });
    }
    await advance(sandbox, 0);
    const received = target.requests.map((r) => JSON.parse(r.body.toString()));
    expect(received.map((e) => e.event).sort()).toEqual([...events].sort());
    const delivered = received.find((e) => e.event === 'tracking.delivered');
    expect(Object.keys(delivered.data).sort()).toEqual([
      'carrier',
      'delivered_at',
      'status',
      'tracking_number',
    ]);
    expectError(
      await sandbox.call('POST', '/_sandbox/events/trigger', { body: { event: 'nope' } }),
      422,
      'invalid_field',
      'event',
    );
    expect((await sandbox.call('GET', '/_sandbox/events?event=label.voided')).json.data).toHaveLength(1);
    expectError(await sandbox.call('GET', '/_sandbox/events?event=nope'), 400, 'invalid_parameter', 'event');
  });
});

describe('crash safety', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  /** Where a sandbox keeps its data across a restart: a SQLite file, or a PostgreSQL schema of its own. */
  async function databaseFile() {
    if (TEST_ENGINE === 'postgres') return newPostgresSchema();
    dir = mkdtempSync(join(tmpdir(), 'sandbox-webhooks-'));
    return join(dir, 'sandbox.db');
  }

  async function open(file: string) {
    const config = testConfig();
    const database =
      TEST_ENGINE === 'postgres'
        ? postgresDatabase(file, { poolSize: 4 })
        : sqliteDatabase(openDatabase(file), file);
    const wall = { now: Date.UTC(2026, 10, 22, 8, 0, 0) };
    const state = await createSandbox({
      database,
      config,
      logger: capturingLogger().logger,
      scenarios: loadScenarios(scenarioDirectories(undefined)),
      realNow: () => wall.now,
    });
    const { app } = state;
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, json: (await response.json()) as any };
    };
    return { database, state, call };
  }

  it('leaves due what a stop during an advance had not sent, and holds no more of a webhook after the restart', async () => {
    const EVENTS = 40;
    const file = await databaseFile();
    const target = await receiver(['hang']);
    const first = await open(file);
    await first.call('POST', '/_sandbox/clock', { frozen: true });
    const hook = (
      await first.call('POST', '/v1/webhooks', {
        url: target.url,
        events: ['shipment.created'],
        secret: SECRET,
      })
    ).json;
    for (let i = 0; i < EVENTS; i++) await first.call('POST', '/v1/shipments', shipmentRequest());
    const advancing = first.call('POST', '/_sandbox/clock/advance', { by: 0 });
    while (target.requests.length < 4) await target.nextRequest();
    await first.state.stop();
    expect((await advancing).status).toBe(200);
    const statuses = async (db: typeof first.state.db) =>
      Object.fromEntries(
        (
          await db.all<{ status: string; n: number }>(
            'SELECT status, count(*) AS n FROM webhook_attempts WHERE webhook_id = ? GROUP BY status',
            [hook.id],
          )
        ).map((row) => [row.status, Number(row.n)]),
      );
    // What was on the wire or waiting for it was cut off (at most the webhook's 16); nothing more was
    // claimed once the stop began.
    const cutOff = (await statuses(first.state.db)).sending ?? 0;
    expect(cutOff).toBeGreaterThanOrEqual(4);
    expect(cutOff).toBeLessThanOrEqual(16);
    expect(await statuses(first.state.db)).toEqual({ sending: cutOff, scheduled: EVENTS - cutOff });
    // As an older sandbox would have left them: every attempt `sending`.
    await first.state.db.run("UPDATE webhook_attempts SET status = 'sending' WHERE status = 'scheduled'");
    await first.database.close();

    const second = await open(file);
    await second.state.services.delivery.start();
    // Sent again: the webhook's 16; the rest wait among the scheduled ones for room.
    expect(await statuses(second.state.db)).toEqual({ sending: 16, scheduled: EVENTS - 16 });
    while (target.requests.length < 8) await target.nextRequest();
    // Once the receiver answers, the background timer sends the rest as the webhook has room.
    target.reply([200]);
    target.release();
    await second.state.scheduler.start();
    while (target.requests.length < 4 + EVENTS) await target.nextRequest();
    await expect.poll(() => statuses(second.state.db)).toEqual({ succeeded: EVENTS });
    await second.state.stop();
    await second.database.close();
  });

  it('sends after a restart what was due or on the wire, and marks nothing delivered without a 2xx', async () => {
    const file = await databaseFile();
    const target = await receiver([500]);

    const first = await open(file);
    await first.call('POST', '/_sandbox/clock', { frozen: true });
    const hook = (
      await first.call('POST', '/v1/webhooks', {
        url: target.url,
        events: ['shipment.created', 'shipment.cancelled'],
        secret: SECRET,
      })
    ).json;
    const shipment = (
      await first.call('POST', '/v1/shipments', {
        from: {
          name: 'A',
          address1: '1 Main St',
          city: 'San Francisco',
          state: 'CA',
          zip: '94104',
          country: 'US',
        },
        to: { name: 'B', address1: '2 Main St', city: 'New York', state: 'NY', zip: '10118', country: 'US' },
        parcel: { weight: 500, length: 10, width: 10, height: 10 },
      })
    ).json;
    await first.call('POST', '/_sandbox/clock/advance', { by: 0 });
    expect(target.requests).toHaveLength(1);
    // A second event is recorded, and its first try is "on the wire" when the process dies.
    await first.call('DELETE', `/v1/shipments/${shipment.id}`);
    await first.state.db.run(
      "UPDATE webhook_attempts SET status = 'sending', sent_at = scheduled_at WHERE status = 'scheduled' AND attempt = 0",
    );
    await first.database.close();

    target.reply([200]);
    const second = await open(file);
    const resent = target.nextRequest();
    await second.state.services.delivery.start();
    const request = await resent;
    expect(JSON.parse(request.body.toString()).event).toBe('shipment.cancelled');
    await second.state.services.delivery.settled(
      (await second.state.stores.accounts.findByKey(second.state.db, DEFAULT_KEY))!.account.id,
    );

    // The first event's retry, scheduled before the restart, still fires at its due time.
    await second.call('POST', '/_sandbox/clock/advance', { by: 59 });
    expect(target.requests).toHaveLength(2);
    await second.call('POST', '/_sandbox/clock/advance', { by: 1 });
    expect(target.requests).toHaveLength(3);

    const attempts = (await second.call('GET', `/_sandbox/webhooks/${hook.id}/deliveries`)).json.data;
    // Newest first by when each attempt was planned: the retry was planned when the first try failed.
    expect(attempts.map((a: any) => [a.event, a.attempt, a.status])).toEqual([
      ['shipment.cancelled', 0, 'succeeded'],
      ['shipment.created', 1, 'succeeded'],
      ['shipment.created', 0, 'failed'],
    ]);
    await second.database.close();
  });
});

describe('an outcome that cannot be written', () => {
  /**
   * Makes writing any send's outcome fail as a broken statement would: neither a full disk nor an
   * outage; with `putBacks`, putting the attempt back among the scheduled ones too (it stays owed).
   */
  async function refuseOutcomes(sandbox: TestSandbox, options = { putBacks: false }) {
    const refused = options.putBacks ? "'succeeded', 'failed', 'scheduled'" : "'succeeded', 'failed'";
    if (TEST_ENGINE === 'sqlite') {
      await sandbox.db.run(`CREATE TRIGGER refuse_outcome BEFORE UPDATE ON webhook_attempts
        WHEN NEW.status IN (${refused}) BEGIN SELECT RAISE(ABORT, 'outcome refused by the test'); END`);
      return;
    }
    await sandbox.db.run(`CREATE FUNCTION refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'outcome refused by the test'; END $$`);
    await sandbox.db.run(`CREATE TRIGGER refuse_outcome BEFORE UPDATE ON webhook_attempts FOR EACH ROW
      WHEN (NEW.status IN (${refused})) EXECUTE FUNCTION refuse_outcome()`);
  }

  async function allowOutcomes(sandbox: TestSandbox) {
    await sandbox.db.run(
      TEST_ENGINE === 'sqlite'
        ? 'DROP TRIGGER refuse_outcome'
        : 'DROP TRIGGER refuse_outcome ON webhook_attempts',
    );
  }

  const statuses = async (sandbox: TestSandbox, webhookId: string) =>
    (await attemptsOf(sandbox, webhookId)).map((attempt) => attempt.status);

  /** Sent once, its outcome refused: outcomes allowed again, it goes out once more 30 s later, not sooner. */
  async function expectSentAgain30sLater(sandbox: TestSandbox, received: unknown[], webhookId: string) {
    await allowOutcomes(sandbox);
    expect((await advance(sandbox, 29)).status).toBe(200);
    expect(received).toHaveLength(1);
    expect((await advance(sandbox, 1)).status).toBe(200);
    expect(received).toHaveLength(2);
    expect(await statuses(sandbox, webhookId)).toEqual(['succeeded']);
  }

  it('sends the attempt again 30 s later on the account clock, and answers the advance that sent it', async () => {
    const sandbox = await frozen();
    const target = await receiver([200]);
    const hook = await register(sandbox, target.url);
    await refuseOutcomes(sandbox);
    expect((await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);

    expect((await advance(sandbox, 0)).status).toBe(200);
    expect(target.requests).toHaveLength(1);
    // Not marked delivered: back among the scheduled, as a crash would have it sent again at the next start.
    const [attempt] = await attemptsOf(sandbox, hook.id);
    expect(attempt).toMatchObject({ status: 'scheduled', attempt: 0 });
    await expectSentAgain30sLater(sandbox, target.requests, hook.id);
  });

  it("sends one taken over late again 30 s after the clock's present, not at once", async () => {
    const sandbox = await createTestSandbox();
    try {
      const target = await receiver([200]);
      const hook = await register(sandbox, target.url);
      await sandbox.newShipment();
      // On the wire when its process stopped; the account's clock ran on for an hour before the next start.
      await sandbox.db.run("UPDATE webhook_attempts SET status = 'sending', sent_at = scheduled_at");
      sandbox.wall.now += 3_600_000;
      await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
      await refuseOutcomes(sandbox);

      await sandbox.services.delivery.start();
      expect((await advance(sandbox, 0)).status).toBe(200);
      expect(target.requests).toHaveLength(1);
      expect(await statuses(sandbox, hook.id)).toEqual(['scheduled']);
      await expectSentAgain30sLater(sandbox, target.requests, hook.id);
    } finally {
      await sandbox.stop();
    }
  });

  it('sends a manual redelivery again as one: to a failed webhook, failing nothing further', async () => {
    const sandbox = await frozen();
    await sandbox.call('POST', '/_sandbox/account', { body: { webhook_retry_schedule: [] } });
    const target = await receiver([503]);
    const hook = await register(sandbox, target.url);
    await sandbox.newShipment();
    expect((await advance(sandbox, 0)).status).toBe(200);
    expect((await sandbox.call('GET', `/v1/webhooks/${hook.id}`)).json.status).toBe('failed');
    const [first] = await attemptsOf(sandbox, hook.id);

    await refuseOutcomes(sandbox);
    const again = await sandbox.call('POST', `/_sandbox/deliveries/${first.id}/redeliver`);
    expect(again.json).toMatchObject({ redelivery: true, status: 'scheduled' });
    await allowOutcomes(sandbox);
    expect((await advance(sandbox, 30)).status).toBe(200);
    expect(target.requests).toHaveLength(3);
    expect(
      (await attemptsOf(sandbox, hook.id)).find((attempt) => attempt.id === again.json.id),
    ).toMatchObject({
      status: 'failed',
      response_status: 503,
    });
    expect((await sandbox.call('GET', `/v1/webhooks/${hook.id}`)).json.status).toBe('failed');
    expect((await sandbox.call('GET', '/_sandbox/emails')).json.data).toHaveLength(1);
  });

  it('sends nothing more to a deleted webhook, not even a manual redelivery it still owes', async () => {
    const sandbox = await frozen();
    const target = await receiver([200]);
    const hook = await register(sandbox, target.url);
    await sandbox.newShipment();
    expect((await advance(sandbox, 0)).status).toBe(200);
    const [first] = await attemptsOf(sandbox, hook.id);

    // Sent, and neither its outcome nor its put-back written: owed, in memory only.
    await refuseOutcomes(sandbox, { putBacks: true });
    const again = await sandbox.call('POST', `/_sandbox/deliveries/${first.id}/redeliver`);
    expect(again.json).toMatchObject({ redelivery: true, status: 'sending' });
    expect((await sandbox.call('DELETE', `/v1/webhooks/${hook.id}`)).status).toBe(200);
    await allowOutcomes(sandbox);
    expect((await advance(sandbox, 60)).status).toBe(200);
    expect(target.requests).toHaveLength(2);
    const owed = await sandbox.call('GET', `/_sandbox/deliveries/${again.json.id}`);
    expect(owed.json.status).toBe('cancelled');
  });

  it('never puts back an owed attempt while it is being sent again', async () => {
    const sandbox = await frozen();
    const target = await receiver([200]);
    const hook = await register(sandbox, target.url);
    await refuseOutcomes(sandbox);
    // Every put-back is written, then answered as failed (the connection lost after its commit): the
    // attempt is due again and still owed, so it goes out again while owed.
    const { attempts } = sandbox.stores;
    const requeue = attempts.requeue.bind(attempts);
    attempts.requeue = async (...args: Parameters<typeof requeue>) => {
      await requeue(...args);
      throw new Error('the connection was lost after the put-back was written');
    };
    await sandbox.newShipment();
    expect((await advance(sandbox, 0)).status).toBe(200);
    expect(await statuses(sandbox, hook.id)).toEqual(['scheduled']);

    // Looks for due work while it is on the wire leave it be: put back then, it would go out twice.
    await allowOutcomes(sandbox);
    expect((await advance(sandbox, 30)).status).toBe(200);
    expect(target.requests).toHaveLength(2);
    expect(await statuses(sandbox, hook.id)).toEqual(['succeeded']);
  });

  it('sends it three more times while every outcome is refused, then leaves it sending', async () => {
    const sandbox = await frozen();
    const target = await receiver([200]);
    const hook = await register(sandbox, target.url);
    await refuseOutcomes(sandbox);
    expect((await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);

    expect((await advance(sandbox, 0)).status).toBe(200);
    expect((await advance(sandbox, 600)).status).toBe(200);
    expect(target.requests).toHaveLength(4);
    expect(await statuses(sandbox, hook.id)).toEqual(['sending']);
    expect(sandbox.logLines.some((line) => line.msg === 'a delivery left sending until the next start')).toBe(
      true,
    );
  });
});

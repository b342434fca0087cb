import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { LEGACY_MIGRATIONS } from '../src/db/legacy-migrations.js';
import { signedBy, startAnsweringReceiver } from './answering-receiver.js';
import { createTestSandbox, expectError, type TestSandbox } from './helpers.js';

const SECRET = 'whsec_probe-0123456789';
const WEBHOOK_TIMEOUT_MS = 1000;

/** Checks the signature and answers at once: 401 to a forgery, 200 otherwise. */
const carefulReceiver = () =>
  startAnsweringReceiver((request) => ({ status: signedBy(SECRET, request) ? 200 : 401 }));

describe('POST /_sandbox/webhooks/:id/probe', () => {
  const receivers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });
  const register = async (sandbox: TestSandbox, url: string, events: string[], key?: string) => {
    const made = await sandbox.call('POST', '/v1/webhooks', { key, body: { url, events, secret: SECRET } });
    expect(made.status).toBe(201);
    return made.json.id as string;
  };

  it('sends one genuine and one forged delivery, marked as probes, and says whether they were told apart', async () => {
    const sandbox = await createTestSandbox({ webhookTimeoutMs: WEBHOOK_TIMEOUT_MS });
    const receiver = await carefulReceiver();
    const bystander = await carefulReceiver();
    receivers.push(receiver, bystander);
    const hook = await register(sandbox, receiver.url, ['tracking.delivered', 'shipment.created']);
    await register(sandbox, bystander.url, ['tracking.delivered']);

    const probe = await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`);
    expect(probe.status).toBe(200);
    expect(probe.json).toEqual({
      genuine: {
        delivery_id: expect.stringMatching(/^dlv_/),
        response_status: 200,
        error: null,
        duration_ms: expect.any(Number),
      },
      forged: {
        delivery_id: expect.stringMatching(/^dlv_/),
        response_status: 401,
        error: 'http',
        duration_ms: expect.any(Number),
      },
      verifies_signatures: true,
    });

    // Both went out at once, each a fresh test event of the first type subscribed, marked as a probe.
    expect(receiver.requests).toHaveLength(2);
    for (const request of receiver.requests) {
      expect(request.headers['service-probe']).toBe('true');
      expect(request.event).toBe('tracking.delivered');
      expect(request.headers['service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    }
    expect(receiver.requests.filter((request) => signedBy(SECRET, request))).toHaveLength(1);
    const eventIds = receiver.requests.map((request) => request.headers['service-event-id']);
    expect(new Set(eventIds).size).toBe(2);

    // The delivery log shows both as probes, with nothing scheduled after them.
    const log = (await sandbox.call('GET', `/_sandbox/webhooks/${hook}/deliveries`)).json.data as any[];
    expect(
      log.map((attempt) => [attempt.id, attempt.probe, attempt.probe_signature, attempt.next_attempt_at]),
    ).toEqual(
      expect.arrayContaining([
        [probe.json.genuine.delivery_id, true, 'genuine', null],
        [probe.json.forged.delivery_id, true, 'forged', null],
      ]),
    );
    expect(log).toHaveLength(2);
    // Each one's request as it was sent, its header included.
    const sent = await sandbox.call('GET', `/_sandbox/deliveries/${probe.json.genuine.delivery_id}`);
    expect(sent.json.request.headers['service-probe']).toBe('true');

    // The test events went to the probed webhook alone, now and later.
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '1h' } });
    expect(bystander.requests).toHaveLength(0);
  });

  it('never retries a probe and never moves its webhook toward failed', async () => {
    const sandbox = await createTestSandbox({ webhookTimeoutMs: WEBHOOK_TIMEOUT_MS });
    const receiver = await startAnsweringReceiver(() => ({ status: 500 }));
    receivers.push(receiver);
    const hook = await register(sandbox, receiver.url, ['shipment.created']);
    // More probes than the retry ladder has rungs: as deliveries they would have failed the webhook.
    for (let i = 0; i < 7; i++) {
      const probe = await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`);
      expect(probe.json).toMatchObject({
        genuine: { response_status: 500, error: 'http' },
        forged: { response_status: 500, error: 'http' },
        verifies_signatures: false,
      });
    }
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: '2d' } });

    expect(receiver.requests).toHaveLength(14);
    expect((await sandbox.call('GET', `/v1/webhooks/${hook}`)).json.status).toBe('active');
    expect((await sandbox.call('GET', '/_sandbox/emails')).json.data).toEqual([]);
    const log = (await sandbox.call('GET', `/_sandbox/webhooks/${hook}/deliveries`)).json.data as any[];
    expect(log).toHaveLength(14);
    expect(
      log.every(
        (attempt) => attempt.probe && attempt.status === 'failed' && attempt.next_attempt_at === null,
      ),
    ).toBe(true);
  });

  it('goes through the destination policy like every delivery', async () => {
    // The name resolves to loopback, which the public policy refuses: nothing is sent anywhere.
    const sandbox = await createTestSandbox(
      { webhookTimeoutMs: WEBHOOK_TIMEOUT_MS, webhookTargets: 'public' },
      { resolveHost: async () => [{ address: '127.0.0.1', family: 4 }] },
    );
    const hook = await register(sandbox, 'https://hooks.shop.example/in', ['shipment.created']);
    const probe = await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`);
    expect(probe.json).toMatchObject({
      genuine: { response_status: null, error: 'destination_not_allowed' },
      forged: { response_status: null, error: 'destination_not_allowed' },
      verifies_signatures: false,
    });
  });

  it("needs shipments:write and a webhook of the caller's own account", async () => {
    const sandbox = await createTestSandbox({ webhookTimeoutMs: WEBHOOK_TIMEOUT_MS });
    const receiver = await carefulReceiver();
    receivers.push(receiver);
    const hook = await register(sandbox, receiver.url, ['shipment.created']);
    const reader = await sandbox.call('POST', '/_sandbox/keys', {
      body: { name: 'r', scopes: ['shipments:read'] },
    });
    expectError(
      await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`, { key: reader.json.value }),
      403,
      'insufficient_scope',
    );
    const other = await sandbox.newAccount();
    expectError(
      await sandbox.call('POST', `/_sandbox/webhooks/${hook}/probe`, { key: other }),
      404,
      'not_found',
    );
    expectError(await sandbox.call('POST', '/_sandbox/webhooks/wh_nope/probe'), 404, 'not_found');
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('migration 11', () => {
  it('keeps every attempt as it was, not a probe, and takes only the two kinds of probe', () => {
    const db = new Database(':memory:');
    db.pragma('foreign_keys = ON');
    for (const migration of LEGACY_MIGRATIONS.slice(0, 10)) db.exec(migration);
    db.exec(`
      INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
        VALUES ('acct_1', 'A', 'growth', 0, 0, 0, 1);
      INSERT INTO webhooks (id, account_id, url, events, secret, status, created_at)
        VALUES ('wh_1', 'acct_1', 'https://shop.example.com/h', '["shipment.created"]', 'secret', 'active', 0);
      INSERT INTO events (id, account_id, type, created_at, body) VALUES ('evt_1', 'acct_1', 'shipment.created', 0, '{}');
      INSERT INTO webhook_attempts (id, account_id, webhook_id, event_id, event_type, attempt, status, scheduled_at,
          sent_at, response_status)
        VALUES ('dlv_1', 'acct_1', 'wh_1', 'evt_1', 'shipment.created', 0, 'succeeded', 1000, 1000, 200);
    `);
    const before = db.prepare('SELECT * FROM webhook_attempts').get() as object;
    db.exec(LEGACY_MIGRATIONS[10] as string);
    expect(db.prepare('SELECT * FROM webhook_attempts').get()).toEqual({
      ...before,
      probe: null,
      sent_wall_at: null,
    });
    const add = db.prepare(
      `INSERT INTO webhook_attempts (id, account_id, webhook_id, event_id, event_type, attempt, status, scheduled_at, probe)
       VALUES (?, 'acct_1', 'wh_1', 'evt_1', 'shipment.created', 0, 'sending', 2000, ?)`,
    );
    add.run('dlv_2', 'genuine');
    add.run('dlv_3', 'forged');
    expect(() => add.run('dlv_4', 'maybe')).toThrow(/CHECK constraint/);
  });
});

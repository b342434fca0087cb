import { afterEach, describe, expect, it } from 'vitest';
import { postgresDatabase } from '../src/db/postgres.js';
import { newPostgresSchema, TEST_ENGINE } from './databases.js';
import { createTestSandbox, shipmentRequest, type TestSandbox } from './helpers.js';
import { type Reply, startReceiver } from './receiver.js';

/**
 * A webhook send that fails inside the sandbox (its event unreadable, its outcome not written, its
 * take-over cut short) puts its attempt back, due again 30 seconds later, or, when even that cannot be
 * written, leaves it `sending`; whatever is left so, no clock advance waits for it forever, on this
 * replica or another, and nothing crashes the process. Failures are made with triggers that refuse
 * the outcome's write (and the put-back's), or a store read that throws once.
 */
const SECRET = 'whsec_0123456789abcdef';
const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
const sandboxes: TestSandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((sandbox) => sandbox.stop()));
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(replies: Reply[] = [200]) {
  const started = await startReceiver(replies);
  receivers.push(started);
  return started;
}

async function frozen(...args: Parameters<typeof createTestSandbox>) {
  const sandbox = await createTestSandbox(...args);
  sandboxes.push(sandbox);
  await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
  return sandbox;
}

async function register(sandbox: TestSandbox, url: string) {
  const response = await sandbox.call('POST', '/v1/webhooks', {
    body: { url, events: ['shipment.created'], secret: SECRET },
  });
  expect(response.status).toBe(201);
  return response.json as { id: string };
}

const advance = (sandbox: TestSandbox, by: number) =>
  sandbox.call('POST', '/_sandbox/clock/advance', { body: { by } });

const statuses = async (sandbox: TestSandbox, webhookId: string) =>
  (
    (await sandbox.call('GET', `/_sandbox/webhooks/${webhookId}/deliveries`)).json.data as {
      status: string;
    }[]
  ).map((attempt) => attempt.status);

const createShipment = async (sandbox: TestSandbox) =>
  expect((await sandbox.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);

/** Two sandboxes over one PostgreSQL schema, as two replicas, with a short send timeout; the first frozen. */
async function twoReplicas() {
  const url = await newPostgresSchema();
  const parts = () => ({ database: postgresDatabase(url, { poolSize: 4 }) });
  const a = await frozen({ webhookTimeoutMs: 500 }, parts());
  const b = await createTestSandbox({ webhookTimeoutMs: 500 }, parts());
  sandboxes.push(b);
  return [a, b] as const;
}

/**
 * Makes the outcome's write fail with PostgreSQL's `code` (`disk_full` passes; `P0001` does not), and
 * with `putBacks`, putting the attempt back among the scheduled ones too.
 */
async function refuseOutcomes(sandbox: TestSandbox, code: string, options = { putBacks: false }) {
  const refused = options.putBacks ? "'succeeded', 'failed', 'scheduled'" : "'succeeded', 'failed'";
  await sandbox.db.run(`CREATE OR REPLACE FUNCTION refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'outcome refused by the test' USING ERRCODE = '${code}'; END $$`);
  await sandbox.db.run(`CREATE OR REPLACE TRIGGER refuse_outcome BEFORE UPDATE ON webhook_attempts FOR EACH ROW
    WHEN (NEW.status IN (${refused})) EXECUTE FUNCTION refuse_outcome()`);
}

/** Makes `object[method]` throw `error` once, then behave. */
function failOnce(object: object, method: string, error: Error) {
  const target = object as Record<string, (...args: unknown[]) => unknown>;
  const original = target[method] as (...args: unknown[]) => unknown;
  let failed = false;
  target[method] = async (...args: unknown[]) => {
    if (failed) return original.apply(object, args);
    failed = true;
    throw error;
  };
}

describe('a send whose event cannot be read', () => {
  it('is logged, goes out again 30 s later on the account clock, and crashes nothing', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const hook = await register(sandbox, target.url);
    await createShipment(sandbox);
    failOnce(
      sandbox.stores.events,
      'body',
      Object.assign(new Error('relation "events" does not exist'), { code: '42P01' }),
    );
    const unhandled: unknown[] = [];
    const noteUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', noteUnhandled);
    try {
      expect((await advance(sandbox, 0)).status).toBe(200);
      expect(target.requests).toHaveLength(0);
      expect(await statuses(sandbox, hook.id)).toEqual(['scheduled']);
      expect((await advance(sandbox, 29)).status).toBe(200);
      expect(target.requests).toHaveLength(0);
      expect((await advance(sandbox, 1)).status).toBe(200);
    } finally {
      process.off('unhandledRejection', noteUnhandled);
    }
    expect(unhandled).toEqual([]);
    expect(target.requests).toHaveLength(1);
    expect(await statuses(sandbox, hook.id)).toEqual(['succeeded']);
    expect(sandbox.logLines.some((line) => line.msg === 'could not send a delivery')).toBe(true);
  });
});

describe.runIf(TEST_ENGINE === 'postgres')('an outcome that cannot be written, over PostgreSQL', () => {
  it('kept for a full disk: the advance answers 507, and the next one writes it once there is room', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const hook = await register(sandbox, target.url);
    await refuseOutcomes(sandbox, 'disk_full');
    await createShipment(sandbox);
    expect((await advance(sandbox, 0)).status).toBe(507);
    expect(target.requests).toHaveLength(1);
    expect(await statuses(sandbox, hook.id)).toEqual(['sending']);

    await sandbox.db.run('DROP TRIGGER refuse_outcome ON webhook_attempts');
    expect((await advance(sandbox, 0)).status).toBe(200);
    expect(await statuses(sandbox, hook.id)).toEqual(['succeeded']);
    expect(target.requests).toHaveLength(1);
  });

  it('kept, then refused for another reason: put back, and sent again 30 s after it went out', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const hook = await register(sandbox, target.url);
    await refuseOutcomes(sandbox, 'disk_full');
    await createShipment(sandbox);
    expect((await advance(sandbox, 0)).status).toBe(507);

    await refuseOutcomes(sandbox, 'P0001');
    expect((await advance(sandbox, 0)).status).toBe(200);
    expect(sandbox.logLines.some((line) => line.msg === 'could not record a delivery outcome')).toBe(true);
    expect(await statuses(sandbox, hook.id)).toEqual(['scheduled']);
    await sandbox.db.run('DROP TRIGGER refuse_outcome ON webhook_attempts');
    expect((await advance(sandbox, 29)).status).toBe(200);
    expect(target.requests).toHaveLength(1);
    expect((await advance(sandbox, 1)).status).toBe(200);
    expect(target.requests).toHaveLength(2);
    expect(await statuses(sandbox, hook.id)).toEqual(['succeeded']);
  });

  it('on one replica: an advance through another waits only until the send has timed out', async () => {
    const [a, b] = await twoReplicas();
    const target = await receiver();
    const hook = await register(a, target.url);
    await refuseOutcomes(a, 'P0001', { putBacks: true });
    await createShipment(a);
    expect((await advance(a, 0)).status).toBe(200);
    expect(await statuses(a, hook.id)).toEqual(['sending']);

    // B sees a send claimed by a live replica: it waits for it until the slot on the wire that send
    // took has ended (the timeout and a margin), then answers.
    expect((await advance(b, 60)).status).toBe(200);
    expect((await advance(a, 0)).status).toBe(200);
    expect(target.requests).toHaveLength(1);
  }, 30_000);
});

describe.runIf(TEST_ENGINE === 'postgres')('a send that failed before it took a slot on the wire', () => {
  it('holds an advance through another replica only until the sends it waits for stop changing', async () => {
    const [a, b] = await twoReplicas();
    const target = await receiver();
    const hook = await register(a, target.url);
    // Taking the slot (setting the end of its time on the wire) fails: the send never goes out.
    await a.db.run(`CREATE FUNCTION refuse_slot() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'slot refused by the test'; END $$`);
    await a.db.run(`CREATE TRIGGER refuse_slot BEFORE UPDATE ON webhook_attempts FOR EACH ROW
      WHEN (NEW.on_wire_until IS NOT NULL AND NEW.on_wire_until IS DISTINCT FROM OLD.on_wire_until)
      EXECUTE FUNCTION refuse_slot()`);
    // Nor can it be put back among the scheduled ones: it stays `sending`.
    await refuseOutcomes(a, 'P0001', { putBacks: true });
    await createShipment(a);
    expect((await advance(a, 0)).status).toBe(200);
    expect(a.logLines.some((line) => line.msg === 'could not send a delivery')).toBe(true);
    expect(await statuses(a, hook.id)).toEqual(['sending']);

    expect((await advance(b, 60)).status).toBe(200);
    expect(target.requests).toHaveLength(0);
  }, 30_000);
});

describe.runIf(TEST_ENGINE === 'postgres')('a take-over cut short', () => {
  it('gives the attempt back, and the next advance sends it', async () => {
    const sandbox = await frozen();
    const target = await receiver();
    const hook = await register(sandbox, target.url);
    await createShipment(sandbox);
    // As a replica that died while sending would have left it.
    await sandbox.db.run(
      "UPDATE webhook_attempts SET status = 'sending', sent_at = scheduled_at, claimed_by = 'a-replica-that-died'",
    );
    failOnce(
      sandbox.stores.webhooks,
      'find',
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    );
    expect((await advance(sandbox, 0)).status).toBe(503);
    expect(await sandbox.db.column('SELECT claimed_by FROM webhook_attempts')).toEqual([null]);

    expect((await advance(sandbox, 0)).status).toBe(200);
    expect(target.requests).toHaveLength(1);
    expect(await statuses(sandbox, hook.id)).toEqual(['succeeded']);
  });
});

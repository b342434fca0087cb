import { describe, expect, it } from 'vitest';
import type { Params, SandboxDatabase, Sql } from '../src/db/sql.js';
import { TEST_ENGINE, testDatabase } from './databases.js';
import { createTestSandbox } from './helpers.js';

/**
 * Every event goes to its subscribers (the webhook outbox, the listen sessions) in the transaction
 * that records it. Over PostgreSQL each subscriber's interest is read in the event's own INSERT, so an
 * event that no webhook takes and no session hears costs neither of their reads (a round trip each);
 * over SQLite every subscriber reads, as a read there costs no round trip.
 */

/** The database, with every statement sent through it (transactions included) written down. */
function recording(database: SandboxDatabase): { database: SandboxDatabase; sent: string[] } {
  const sent: string[] = [];
  const noted = (text: string) => {
    sent.push(text);
    return text;
  };
  const wrap = (sql: Sql): Sql => ({
    engine: sql.engine,
    all: (text: string, params?: Params) => sql.all(noted(text), params),
    get: (text: string, params?: Params) => sql.get(noted(text), params),
    column: (text: string, params?: Params) => sql.column(noted(text), params),
    value: (text: string, params?: Params) => sql.value(noted(text), params),
    run: (text: string, params?: Params) => sql.run(noted(text), params),
    transaction: (work) => sql.transaction((tx) => work(wrap(tx))),
  });
  return {
    sent,
    database: {
      engine: database.engine,
      sql: wrap(database.sql),
      memory: database.memory,
      description: database.description,
      migrate: (owners) => database.migrate(owners),
      ping: (ms) => database.ping(ms),
      connections: () => database.connections(),
      close: () => database.close(),
    },
  };
}

const WEBHOOKS_READ = /FROM webhooks w(?!\s+WHERE w\.account_id = events\.account_id)/;
const SESSIONS_READ = /FROM listener_sessions WHERE account_id = \?/;

describe('events and their subscribers', () => {
  it("read a subscriber's table only when it may have something to do, over PostgreSQL", async () => {
    const { database, sent } = recording(await testDatabase());
    const sandbox = await createTestSandbox({}, { database });
    const key = await sandbox.newAccount();
    await sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });

    sent.length = 0;
    await sandbox.newShipment({}, key);
    const quiet = sent.filter((text) => WEBHOOKS_READ.test(text) || SESSIONS_READ.test(text));
    expect(quiet).toHaveLength(TEST_ENGINE === 'postgres' ? 0 : 2);

    const webhook = await sandbox.call('POST', '/v1/webhooks', {
      key,
      body: {
        url: 'http://127.0.0.1:9/hook',
        events: ['shipment.created'],
        secret: 'whsec_subscribers-test',
      },
    });
    expect(webhook.status).toBe(201);
    sent.length = 0;
    await sandbox.newShipment({}, key);
    expect(sent.filter((text) => WEBHOOKS_READ.test(text))).toHaveLength(1);
    expect(sent.filter((text) => SESSIONS_READ.test(text))).toHaveLength(TEST_ENGINE === 'postgres' ? 0 : 1);
    const deliveries = await sandbox.call('GET', `/_sandbox/webhooks/${webhook.json.id}/deliveries`, { key });
    expect(deliveries.json.data.map((attempt: { event: string }) => attempt.event)).toEqual([
      'shipment.created',
    ]);
  });
});

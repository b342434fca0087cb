import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { storageFailure } from '../src/core/storage-errors.js';
import { postgresDatabase } from '../src/db/postgres.js';
import type { SandboxDatabase } from '../src/db/sql.js';
import { WRITER_LOCK_TIMING, WriterLock } from '../src/db/writer-lock.js';
import { type RunningServer, startServer } from '../src/server.js';
import { newPostgresSchema, TEST_ENGINE } from './databases.js';
import { createTestSandbox, shipmentRequest } from './helpers.js';

/**
 * The replicas' lock (db/writer-lock.ts) on a real PostgreSQL server: the only replica keeps what it
 * reads, and lets it go before another replica writes anything; one whose lock session ends keeps
 * nothing and writes nothing until it holds the lock again.
 */
describe.runIf(TEST_ENGINE === 'postgres')('the replicas lock', () => {
  const opened: SandboxDatabase[] = [];
  const clients: pg.Client[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((database) => database.close()));
    await Promise.all(clients.splice(0).map((client) => client.end()));
  });

  const quick = { graceMs: 0, regainEveryMs: 50, askEveryMs: 10, reconnectMs: 20 };
  function open(url: string, timing = {}): SandboxDatabase {
    const database = postgresDatabase(url, { poolSize: 2, writerLockTiming: { ...quick, ...timing } });
    opened.push(database);
    return database;
  }
  async function admin(url: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    clients.push(client);
    return client;
  }
  const schemaOf = (url: string) => (new URL(url).searchParams.get('options') ?? '').split('=')[1] as string;
  /** How a statement on its own and one in a transaction fail (storageFailure), or 'answered'. */
  const failuresOf = (database: SandboxDatabase) =>
    Promise.all(
      [database.sql.value('SELECT 1'), database.sql.transaction((tx) => tx.value('SELECT 1'))].map((asked) =>
        asked.then(
          () => 'answered',
          (error: unknown) => storageFailure(error),
        ),
      ),
    );
  /** The lock's key in SQL, for a schema named outright (as a session of another schema would). */
  const keyOf = (schema: string) => `hashtext('shipping-sandbox writers'), hashtext('${schema}')`;

  it('lets the only replica keep, and makes it let go before a second one writes; alone again once it leaves', async () => {
    const url = await newPostgresSchema();
    const first = open(url);
    let dropped = 0;
    first.memory.onWithdraw(() => {
      dropped += 1;
    });
    expect(await first.sql.value('SELECT 1')).toBe(1);
    await vi.waitFor(() => expect(first.memory.granted).toBe(true));
    const grantedAt = first.memory.generation;

    const second = open(url);
    // The second's first statement runs only once it holds the lock shared, by which time the first
    // has dropped what it kept.
    await second.sql.run('CREATE TABLE written_by_the_second (n int)');
    expect([dropped, first.memory.granted, second.memory.granted]).toEqual([1, false, false]);
    expect(first.memory.generation).toBeGreaterThan(grantedAt);
    // Both write while they share it.
    expect(await first.sql.value('SELECT count(*) FROM written_by_the_second')).toBe(0);

    await opened.splice(opened.indexOf(second), 1)[0]?.close();
    await vi.waitFor(() => expect(first.memory.granted).toBe(true));
    expect(dropped).toBe(1);
  });

  it('keeps nothing once its lock session ends, and holds the lock again by itself', async () => {
    const url = await newPostgresSchema();
    const database = open(url);
    let dropped = 0;
    database.memory.onWithdraw(() => {
      dropped += 1;
    });
    await database.sql.value('SELECT 1');
    await vi.waitFor(() => expect(database.memory.granted).toBe(true));

    const other = await admin(url);
    const ended = await other.query(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_locks
        WHERE locktype = 'advisory' AND objsubid = 2 AND granted
          AND classid = hashtext('shipping-sandbox writers')::oid AND objid = hashtext($1)::oid`,
      [schemaOf(url)],
    );
    expect(ended.rows).toEqual([{ ended: true }]);
    await vi.waitFor(() => expect(dropped).toBe(1));
    await vi.waitFor(() => expect(database.memory.granted).toBe(true));
    expect(await database.sql.value('SELECT 1')).toBe(1);
  });

  /** The sessions that hold the schema's replicas lock, in any mode. */
  async function holders(url: string): Promise<number> {
    const other = await admin(url);
    const { rows } = await other.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND objsubid = 2 AND granted
          AND classid = hashtext('shipping-sandbox writers')::oid AND objid = hashtext($1)::oid`,
      [schemaOf(url)],
    );
    return rows[0]?.n ?? -1;
  }

  /** A replica's lock on its own, its sessions named so that they can be found. */
  function lockOf(url: string) {
    const name = `writer-lock-test-${Math.random().toString(36).slice(2)}`;
    const lock = new WriterLock(
      { connectionString: url, application_name: name },
      { ...WRITER_LOCK_TIMING, ...quick },
    );
    const sessions = async (other: pg.Client) =>
      (
        await other.query<{ query: string }>(
          'SELECT query FROM pg_stat_activity WHERE application_name = $1',
          [name],
        )
      ).rows.map((row) => row.query);
    return { lock, sessions };
  }

  it('lets go of the lock and of its session when closed while it joins', async () => {
    const url = await newPostgresSchema();
    const { lock, sessions } = lockOf(url);
    // The first statement starts the join; the replica is closed before its connection is open.
    const waiting = lock.held(10_000)?.then(
      () => 'went ahead',
      (error: unknown) => storageFailure(error),
    );
    await lock.close();
    expect(await holders(url)).toBe(0);
    expect(await sessions(await admin(url))).toEqual([]);
    expect(await waiting).toBe('unavailable');
  });

  it('fails what waits for the lock at once when closed, rather than when its time is up', async () => {
    const url = await newPostgresSchema();
    const stuck = await admin(url);
    await stuck.query(`SELECT pg_advisory_lock(${keyOf(schemaOf(url))})`);
    const { lock, sessions } = lockOf(url);
    let failed: unknown;
    lock.held(60_000)?.catch((error: unknown) => {
      failed = error;
    });
    // Joining: it asks the sole holder to step aside, which never answers.
    await vi.waitFor(async () => expect((await sessions(stuck)).join()).toContain('pg_notify'));
    await lock.close();
    await vi.waitFor(() => expect(storageFailure(failed)).toBe('unavailable'), { timeout: 1_000 });
  });

  it('fails statements at once while the database cannot be reached, rather than waiting for the lock', async () => {
    // Nothing listens on port 1 of loopback: each try to join is refused.
    const database = open('postgresql://postgres@127.0.0.1:1/sandbox', { waitMs: 60_000 });
    expect(await failuresOf(database)).toEqual(['unavailable', 'unavailable']);
    expect(await database.ping(60_000)).toBe(false);
  }, 10_000);

  it('holds every statement back while another holds the lock alone, as the database being away', async () => {
    const url = await newPostgresSchema();
    // A sole replica that does not answer (a process stopped with SIGSTOP holds its lock).
    const stuck = await admin(url);
    await stuck.query(`SELECT pg_advisory_lock(${keyOf(schemaOf(url))})`);
    const database = open(url, { waitMs: 300 });

    expect(await failuresOf(database)).toEqual(['unavailable', 'unavailable']);
    expect(await database.ping(300)).toBe(false);
    expect(database.memory.granted).toBe(false);

    await stuck.query(`SELECT pg_advisory_unlock(${keyOf(schemaOf(url))})`);
    expect(await database.sql.value('SELECT 1')).toBe(1);
    expect(await database.ping(1000)).toBe(true);
    await vi.waitFor(() => expect(database.memory.granted).toBe(true));
  });
});

/**
 * The same through the built server over HTTP: a sandbox alone over PostgreSQL answers from memory,
 * and a replica that joins changes nothing it would answer stale.
 */
describe.runIf(TEST_ENGINE === 'postgres')('a sandbox alone over PostgreSQL, then a second replica', () => {
  const running: RunningServer[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((server) => server.close()));
  });

  async function start(database: string): Promise<RunningServer> {
    const server = await startServer(testConfig({ database }), undefined, { https: false });
    running.push(server);
    return server;
  }
  async function call(server: RunningServer, key: string, method: string, path: string, body?: unknown) {
    const response = await fetch(`${server.origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  }

  it("reads another replica's cancel, key revocation and fault rule at once, though it kept them", async () => {
    const database = await newPostgresSchema();
    const first = await start(database);
    const made = await fetch(`${first.origin}/_sandbox/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'starter' }),
    });
    const key = ((await made.json()) as { api_key: string }).api_key;
    const minted = (await call(first, key, 'POST', '/_sandbox/keys', { name: 'ci' })).json;
    const id = (await call(first, key, 'POST', '/v1/shipments', shipmentRequest())).json.id as string;
    const accountId = (await call(first, key, 'GET', '/_sandbox/account')).json.id as string;
    const { memory } = first.sandbox.database;
    await vi.waitFor(() => expect(memory.granted).toBe(true));
    // Read twice (kept from the second read on): the shipment, the keys, the account's rules.
    for (let i = 0; i < 2; i++) {
      expect((await call(first, key, 'GET', `/v1/shipments/${id}`)).json.status).toBe('created');
      expect((await call(first, minted.value, 'GET', '/v1/shipments')).status).toBe(200);
    }
    expect(first.sandbox.services.shipments.keeps(accountId)).toBe(true);

    const second = await start(database);
    expect([memory.granted, first.sandbox.services.shipments.keeps(accountId)]).toEqual([false, false]);
    const metrics = await (await fetch(`${first.origin}/metrics`)).text();
    expect(metrics).toMatch(/^sandbox_keeps_reads 0$/m);
    expect((await call(second, key, 'DELETE', `/v1/shipments/${id}`)).json.status).toBe('cancelled');
    expect((await call(first, key, 'GET', `/v1/shipments/${id}`)).json.status).toBe('cancelled');
    expect((await call(second, key, 'DELETE', `/_sandbox/keys/${minted.id}`)).status).toBe(200);
    const refused = await call(first, minted.value, 'GET', '/v1/shipments');
    expect([refused.status, refused.json.error.code]).toEqual([401, 'invalid_api_key']);
    const rule = { method: 'GET', path: '/v1/shipments', status: 503 };
    expect((await call(second, key, 'POST', '/_sandbox/faults', rule)).status).toBe(201);
    expect((await call(first, key, 'GET', '/v1/shipments')).status).toBe(503);

    // Alone again once the second has gone, and keeping again.
    await running.splice(running.indexOf(second), 1)[0]?.close();
    await vi.waitFor(() => expect(memory.granted).toBe(true), { timeout: 5_000 });
  });
});

/**
 * The only replica keeps what it reads, but over PostgreSQL a statement outside one of its own open
 * transactions reads what was there before it: what such a read finds is not kept, or the write,
 * once answered, would not be what the next read sees.
 */
describe.runIf(TEST_ENGINE === 'postgres')('the only replica, while one of its transactions is open', () => {
  it("keeps no shipment read before a cancel's transaction ends", async () => {
    const sandbox = await createTestSandbox();
    await vi.waitFor(() => expect(sandbox.database.memory.granted).toBe(true));
    const key = await sandbox.newAccount();
    const { id } = await sandbox.newShipment({}, key);
    const status = async () => (await sandbox.call('GET', `/v1/shipments/${id}`, { key })).json.status;
    // Polled: kept from its second read on.
    for (let i = 0; i < 2; i++) expect(await status()).toBe('created');

    // The client polls the shipment while its cancel is being written.
    const { store } = sandbox.ports.events;
    const record = store.record.bind(store);
    vi.spyOn(store, 'record').mockImplementation(async (...args) => {
      expect(await status()).toBe('created');
      return record(...args);
    });
    expect((await sandbox.call('DELETE', `/v1/shipments/${id}`, { key })).json.status).toBe('cancelled');
    vi.restoreAllMocks();
    expect(await status()).toBe('cancelled');
  });

  it("keeps no fault rule read before a reset's transaction ends", async () => {
    const sandbox = await createTestSandbox();
    await vi.waitFor(() => expect(sandbox.database.memory.granted).toBe(true));
    const key = await sandbox.newAccount();
    const rule = { method: 'GET', path: '/v1/shipments', status: 503 };
    expect((await sandbox.call('POST', '/_sandbox/faults', { key, body: rule })).status).toBe(201);
    const list = async () => (await sandbox.call('GET', '/v1/shipments', { key })).status;
    expect(await list()).toBe(503);

    // A request comes in while the reset is deleting the account's rules.
    const { store } = sandbox.ports.faults;
    const deleteAll = store.deleteAll.bind(store);
    vi.spyOn(store, 'deleteAll').mockImplementation(async (...args) => {
      await deleteAll(...args);
      expect(await list()).toBe(503);
    });
    expect((await sandbox.call('POST', '/_sandbox/reset', { key })).status).toBe(200);
    vi.restoreAllMocks();
    expect(await list()).toBe(200);
  });
});

describe.runIf(TEST_ENGINE === 'postgres')('the only replica, as another joins during a request', () => {
  it('applies the fault rule it wrote to a request whose key it kept from before the rule', async () => {
    const url = await newPostgresSchema();
    const database = postgresDatabase(url, { poolSize: 4, writerLockTiming: { graceMs: 0 } });
    const sandbox = await createTestSandbox({}, { database });
    await vi.waitFor(() => expect(database.memory.granted).toBe(true));
    const key = await sandbox.newAccount();
    const list = async () => (await sandbox.call('GET', '/v1/shipments', { key })).status;
    // The key is read, and kept, while the account has no rule.
    expect(await list()).toBe(200);
    const rule = { method: 'GET', path: '/v1/shipments', status: 503 };
    expect((await sandbox.call('POST', '/_sandbox/faults', { key, body: rule })).status).toBe(201);
    expect(await list()).toBe(503);

    // The next request finds its key in memory; a second replica joins before its faults are looked at.
    const second = postgresDatabase(url, { poolSize: 1, writerLockTiming: { graceMs: 0, askEveryMs: 10 } });
    try {
      const { rateLimiter } = sandbox.ports.accounts;
      const take = rateLimiter.take.bind(rateLimiter);
      vi.spyOn(rateLimiter, 'take').mockImplementation(async (...args) => {
        await second.sql.value('SELECT 1');
        return take(...args);
      });
      expect(await list()).toBe(503);
      expect(database.memory.granted).toBe(false);
    } finally {
      vi.restoreAllMocks();
      await second.close();
    }
  });
});

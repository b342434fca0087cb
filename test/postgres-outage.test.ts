import { readFile } from 'node:fs/promises';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { testConfig } from '../src/config/index.js';
import { storageFailure } from '../src/core/storage-errors.js';
import { postgresDatabase } from '../src/db/postgres.js';
import { type RunningServer, startServer } from '../src/server.js';
import { newPostgresSchema } from './databases.js';
import { DEFAULT_KEY, shipmentRequest } from './helpers.js';

/**
 * The database going away under a running sandbox: requests answer `503 service_unavailable` within
 * five seconds (never hang, never 500), `/healthz` answers 503, and the same process serves again once
 * the server is back, without a restart. A server of this file's own, which it stops and starts.
 */
let postgres: PostgresServer;
let sandbox: RunningServer;

beforeAll(async () => {
  postgres = await startPostgresServer();
  sandbox = await startServer(testConfig({ database: await newPostgresSchema(postgres.url) }), undefined, {
    https: false,
  });
}, 60_000);

afterAll(async () => {
  await sandbox?.close();
  await postgres?.stop();
});

const call = (method: string, path: string, body?: unknown) =>
  fetch(`${sandbox.origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${DEFAULT_KEY}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe('the database going away', () => {
  it('answers 503 within seconds while PostgreSQL is down, and serves again once it is back', async () => {
    const created = await call('POST', '/v1/shipments', shipmentRequest());
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect(await (await fetch(`${sandbox.origin}/healthz`)).json()).toEqual({
      status: 'ok',
      database: 'postgres',
    });

    await postgres.halt();
    for (const [method, path, body] of [
      ['GET', `/v1/shipments/${id}`, undefined],
      ['POST', '/v1/shipments', shipmentRequest()],
      ['GET', '/v1/shipments', undefined],
    ] as const) {
      const started = performance.now();
      const response = await call(method, path, body);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(response.status).toBe(503);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
    }
    const health = await fetch(`${sandbox.origin}/healthz`);
    expect([health.status, await health.json()]).toEqual([
      503,
      { status: 'unavailable', database: 'postgres' },
    ]);
    // Through the server's Unix socket, which went with it: out of reach all the same.
    const viaSocket = postgresDatabase(
      `postgresql:///postgres?host=${postgres.socketFolder}&port=${postgres.port}&user=postgres`,
    );
    try {
      const statement = await viaSocket.sql.value('SELECT 1').catch((error: unknown) => error);
      const transaction = await viaSocket.sql
        .transaction((tx) => tx.value('SELECT 1'))
        .catch((error: unknown) => error);
      expect([storageFailure(statement), storageFailure(transaction)]).toEqual([
        'unavailable',
        'unavailable',
      ]);
      // A missing file is no database being away.
      const missing = await readFile(join(postgres.socketFolder, 'none')).catch((error: unknown) => error);
      expect(storageFailure(missing)).toBeUndefined();
    } finally {
      await viaSocket.close();
    }

    await postgres.start();
    // The pool opens new connections: the same process answers again, its data intact.
    const again = await call('GET', `/v1/shipments/${id}`);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { id: string }).id).toBe(id);
    expect((await call('POST', '/v1/shipments', shipmentRequest())).status).toBe(201);
    expect((await fetch(`${sandbox.origin}/healthz`)).status).toBe(200);
  }, 60_000);
});

describe('a server that takes the connection and never answers', () => {
  it('fails statements and transactions as out of reach once the connection times out', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const database = postgresDatabase(`postgres://sandbox@127.0.0.1:${port}/sandbox`);
    try {
      const started = performance.now();
      const [statement, transaction] = await Promise.all([
        database.sql.value('SELECT 1').catch((error: unknown) => error),
        database.sql.transaction((tx) => tx.value('SELECT 1')).catch((error: unknown) => error),
      ]);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect([storageFailure(statement), storageFailure(transaction)]).toEqual([
        'unavailable',
        'unavailable',
      ]);
    } finally {
      await database.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('refuses statements once closed, as out of reach, opening no connection', async () => {
    const database = postgresDatabase(await newPostgresSchema(postgres.url));
    expect(await database.sql.value('SELECT 1')).toBe(1);
    await database.close();
    expect(database.connections().total).toBe(0);
    const late = await database.sql.value('SELECT 1').catch((error: unknown) => error);
    expect(storageFailure(late)).toBe('unavailable');
    expect(database.connections().total).toBe(0);
  });
});

describe('a replica that stalls inside a transaction', () => {
  it('has its transaction ended by the server, so that its locks go to the others, and fails it as out of reach', async () => {
    const url = await newPostgresSchema(postgres.url);
    const stalled = postgresDatabase(url, { idleInTransactionMs: 300 });
    const other = postgresDatabase(url);
    try {
      await other.sql.run('CREATE TABLE held (id INTEGER PRIMARY KEY)');
      await other.sql.run('INSERT INTO held (id) VALUES (1)');
      let resume = () => {};
      const paused = new Promise<void>((resolve) => {
        resume = resolve;
      });
      let locked = () => {};
      const holding = new Promise<void>((resolve) => {
        locked = resolve;
      });
      // Takes the row's lock, then goes quiet, as a replica stopped by its host would.
      const stalledWork = stalled.sql.transaction(async (tx) => {
        await tx.run('SELECT id FROM held WHERE id = 1 FOR UPDATE');
        locked();
        await paused;
        await tx.run('UPDATE held SET id = 2 WHERE id = 1');
      });
      await holding;
      // Waits for the lock until the server ends the idle transaction, then gets it.
      expect(await other.sql.run('UPDATE held SET id = 3 WHERE id = 1')).toBe(1);
      resume();
      const failure = await stalledWork.then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(storageFailure(failure)).toBe('unavailable');
      expect(await other.sql.value('SELECT id FROM held')).toBe(3);
      // The pool gives the stalled replica a good connection for its next request.
      expect(await stalled.sql.value('SELECT count(*) FROM held')).toBe(1);
    } finally {
      await Promise.all([stalled.close(), other.close()]);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { testConfig } from '../src/config/index.js';
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

    await postgres.start();
    // The pool opens new connections: the same process answers again, its data intact.
    const again = await call('GET', `/v1/shipments/${id}`);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { id: string }).id).toBe(id);
    expect((await call('POST', '/v1/shipments', shipmentRequest())).status).toBe(201);
    expect((await fetch(`${sandbox.origin}/healthz`)).status).toBe(200);
  }, 60_000);
});

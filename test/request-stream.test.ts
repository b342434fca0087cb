import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { OpenAPIHono } from '@hono/zod-openapi';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config/index.js';
import type { Caller } from '../src/core/actor.js';
import { SCOPES } from '../src/core/actor.js';
import type { AppEnv } from '../src/http/context.js';
import { errorHandler } from '../src/http/errors.js';
import { createRouter } from '../src/http/router.js';
import { type JournaledRequest, MemoryJournal } from '../src/journal/journal.js';
import { addRequestStream } from '../src/journal/stream-routes.js';
import { type RunningSandbox, startServer } from '../src/server.js';
import { callSandbox, newAccountAt } from './cli-harness.js';
import { testDatabaseUrl } from './databases.js';
import { capturingLogger, journaledRequest, shipmentRequest } from './helpers.js';
import { openStream } from './sse.js';

/**
 * `GET /_sandbox/requests/stream` over a real socket: what it sends, to whom, that watching costs the
 * account nothing, and that a stream leaves nothing behind once its client has gone.
 */

describe('GET /_sandbox/requests/stream on a running sandbox', () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startServer(testConfig({ database: await testDatabaseUrl() }));
  });
  afterAll(() => sandbox.close());

  const api = (method: string, path: string, key: string, body?: unknown) =>
    callSandbox(sandbox.origin, method, path, key, body);

  it("sends each of the account's requests as the journal records it, and only the account's", async () => {
    const [key, other] = await Promise.all([newAccountAt(sandbox.origin), newAccountAt(sandbox.origin)]);
    const stream = await openStream(`${sandbox.origin}/_sandbox/requests/stream`, key);
    try {
      expect(stream.status).toBe(200);
      expect(stream.contentType).toBe('text/event-stream');
      await api('GET', '/v1/shipments', other);
      const created = await api('POST', '/v1/shipments', key, shipmentRequest({ carrier: 'usps' }));
      await api('POST', '/v1/labels', key, { shipment_id: created.body.id, format: 'gif' });

      const refused = await stream.next((m) => m.event === 'request' && m.data.includes('/v1/labels'));
      const requests = stream.seen.filter((m) => m.event === 'request').map((m) => JSON.parse(m.data));
      expect(requests).toEqual([
        expect.objectContaining({ method: 'POST', path: '/v1/shipments', status: 201, code: null }),
        expect.objectContaining({
          method: 'POST',
          path: '/v1/labels',
          status: 422,
          code: 'invalid_field',
          field: 'format',
        }),
      ]);
      // The event's id is the entry's, as the journal lists it.
      const journal = (await api('GET', '/_sandbox/requests', key)).body.data;
      expect(refused.id).toBe(journal[0].id);
      expect(JSON.parse(refused.data)).toEqual(journal[0]);
    } finally {
      stream.close();
    }
  });

  it('costs the account nothing: no rate limit, no journal entry, no report evidence', async () => {
    const key = await newAccountAt(sandbox.origin);
    const remaining = async () =>
      Number(
        (
          await fetch(`${sandbox.origin}/v1/shipments`, { headers: { authorization: `Bearer ${key}` } })
        ).headers.get('x-ratelimit-remaining'),
      );
    // A frozen clock at the start of a minute: the rate limit's window cannot roll over between the reads.
    await api('POST', '/_sandbox/clock', key, { frozen: true });
    const { now } = (await api('GET', '/_sandbox/clock', key)).body;
    const nextMinute = Math.floor(Date.parse(now) / 60_000) * 60_000 + 60_000;
    await api('POST', '/_sandbox/clock/advance', key, { to: new Date(nextMinute).toISOString() });
    const before = await remaining();
    const streams = await Promise.all(
      [1, 2, 3].map(() => openStream(`${sandbox.origin}/_sandbox/requests/stream`, key)),
    );
    for (const stream of streams) stream.close();
    // Only the two reads of the limit count: the three streams do not.
    expect(await remaining()).toBe(before - 1);
    const journal = (await api('GET', '/_sandbox/requests', key)).body.data;
    expect(journal.map((entry: { path: string }) => entry.path)).toEqual(['/v1/shipments', '/v1/shipments']);
  });

  it('refuses a missing key and a key without shipments:read, in the contract error body', async () => {
    const key = await newAccountAt(sandbox.origin);
    const made = await api('POST', '/_sandbox/keys', key, { name: 'rates only', scopes: ['rates:read'] });
    const noKey = await fetch(`${sandbox.origin}/_sandbox/requests/stream`);
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as any).error.code).toBe('missing_api_key');
    const narrow = await fetch(`${sandbox.origin}/_sandbox/requests/stream`, {
      headers: { authorization: `Bearer ${made.body.value}` },
    });
    expect(narrow.status).toBe(403);
    expect(((await narrow.json()) as any).error.code).toBe('insufficient_scope');
  });

  it('opens at most 20 streams of an account at once, and another once one closes', async () => {
    const [key, other] = await Promise.all([newAccountAt(sandbox.origin), newAccountAt(sandbox.origin)]);
    const url = `${sandbox.origin}/_sandbox/requests/stream`;
    const streams = [];
    for (let i = 0; i < 20; i++) streams.push(await openStream(url, key));
    try {
      expect(streams.map((stream) => stream.status)).toEqual(Array(20).fill(200));
      const refused = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      expect(refused.status).toBe(422);
      expect(((await refused.json()) as any).error).toMatchObject({
        code: 'limit_reached',
        message:
          'An account has at most 20 request streams open on a server; close one first (a `logs tail`, say). This one has 20.',
      });
      // Another account's are its own.
      const theirs = await openStream(url, other);
      expect(theirs.status).toBe(200);
      theirs.close();

      const closing = streams.pop();
      closing?.close();
      await closing?.ended;
      await vi.waitFor(
        async () => {
          const again = await openStream(url, key);
          streams.push(again);
          expect(again.status).toBe(200);
        },
        { timeout: 5000, interval: 50 },
      );
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('ends open streams when the sandbox shuts down, so they do not hold the shutdown up', async () => {
    const own = await startServer(testConfig({ database: await testDatabaseUrl() }));
    const key = await newAccountAt(own.origin);
    const stream = await openStream(`${own.origin}/_sandbox/requests/stream`, key);
    const started = performance.now();
    // Ten seconds of grace, as the command line gives: a stream left open would take all of them.
    await own.shutdown(10_000);
    expect(performance.now() - started).toBeLessThan(5000);
    await stream.ended;
  });
});

describe('the request stream, alone on a socket', () => {
  const caller = (accountId: string): Caller => ({ accountId, keyId: 'key_1', scopes: SCOPES, now: 0 });
  const entry = (n: number, overrides: Partial<JournaledRequest> = {}): JournaledRequest => {
    const at = Date.UTC(2026, 10, 22, 8, 0, 0);
    return journaledRequest({ id: `req_${n}`, at, wallAt: at, answeredWallAt: at, ...overrides });
  };

  /** The route mounted alone, the account named by the `x-account` header, over Node's adapter. */
  async function serveStream(heartbeatMs: number) {
    const journal = new MemoryJournal();
    const router = createRouter();
    const endAll = addRequestStream(router, journal, { heartbeatMs });
    const app = new OpenAPIHono<AppEnv>();
    app.onError(errorHandler(capturingLogger().logger));
    app.use('*', (c, next) => {
      c.set('caller', caller(c.req.header('x-account') ?? 'acct_a'));
      return next();
    });
    app.route('/', router);
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const started = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(started));
    });
    const { port } = server.address() as AddressInfo;
    return {
      journal,
      endAll,
      url: `http://127.0.0.1:${port}/requests/stream`,
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          (server as Server).closeAllConnections();
        }),
    };
  }

  it('stops listening to the journal once its client goes away: no listener is left behind', async () => {
    const served = await serveStream(60_000);
    try {
      const streams = await Promise.all([1, 2, 3].map(() => openStream(served.url, 'any')));
      expect(served.journal.listenerCount).toBe(3);
      served.journal.record('acct_a', entry(1));
      for (const stream of streams)
        expect((await stream.next((m) => m.event === 'request')).id).toBe('req_1');

      for (const stream of streams) stream.close();
      await vi.waitFor(() => expect(served.journal.listenerCount).toBe(0), { timeout: 5000, interval: 10 });
      // The journal goes on, and tells no one.
      served.journal.record('acct_a', entry(2));
    } finally {
      await served.close();
    }
  });

  it('says it is alive between requests, and ends every stream when asked', async () => {
    const served = await serveStream(20);
    try {
      const stream = await openStream(served.url, 'any');
      expect(await stream.next((m) => m.event === 'comment')).toMatchObject({ data: 'listening' });
      expect(await stream.next((m) => m.data === 'heartbeat')).toMatchObject({ event: 'comment' });
      served.endAll();
      await stream.ended;
      expect(served.journal.listenerCount).toBe(0);
    } finally {
      await served.close();
    }
  });

  it("sends an account's requests to that account's streams only", async () => {
    const served = await serveStream(60_000);
    try {
      const a = await openStream(served.url, 'any', { 'x-account': 'acct_a' });
      const b = await openStream(served.url, 'any', { 'x-account': 'acct_b' });
      served.journal.record('acct_b', entry(1));
      served.journal.record('acct_a', entry(2));
      expect((await a.next((m) => m.event === 'request')).id).toBe('req_2');
      expect((await b.next((m) => m.event === 'request')).id).toBe('req_1');
      expect(a.seen.filter((m) => m.event === 'request').map((m) => m.id)).toEqual(['req_2']);
      expect(b.seen.filter((m) => m.event === 'request').map((m) => m.id)).toEqual(['req_1']);
      a.close();
      b.close();
    } finally {
      await served.close();
    }
  });
});

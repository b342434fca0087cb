import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postgresDatabase } from '../src/db/postgres.js';
import { callSandbox } from './cli-harness.js';
import { newPostgresSchema, TEST_ENGINE } from './databases.js';
import {
  createTestSandbox,
  expectError,
  serveSandbox,
  shipmentRequest,
  type TestSandbox,
} from './helpers.js';
import { type OpenStream, openStream } from './listen-harness.js';

/**
 * Listen sessions over a real socket: what the stream sends, what the command posts back, the
 * retries on the account's clock, reconnecting, the end 10 s after the connection closed (driven by
 * the sandbox's wall clock, which the test moves), and that none of it counts against the account.
 */

const HEARTBEAT_MS = 100;

let sandbox: TestSandbox;
let served: Awaited<ReturnType<typeof serveSandbox>>;
beforeAll(async () => {
  sandbox = await createTestSandbox({}, { listenerTiming: { heartbeatMs: HEARTBEAT_MS } });
  await sandbox.start();
  served = await serveSandbox(sandbox);
});
afterAll(async () => {
  await served.close();
  await sandbox.stop();
});

const call = (method: string, path: string, key: string | null, body?: unknown) =>
  callSandbox(served.origin, method, path, key, body);

async function openSession(key: string, body: Record<string, unknown> = {}) {
  const opened = await call('POST', '/_sandbox/listeners', key, body);
  expect(opened.status).toBe(201);
  return opened.body as { id: string; forward_to: string | null; events: string[]; connected_at: string };
}

const streamOf = (key: string, id: string) =>
  openStream(`${served.origin}/_sandbox/listeners/${id}/stream`, key);

/** The next delivery down the stream, parsed. */
async function nextDelivery(stream: OpenStream) {
  const message = await stream.next((m) => m.event === 'delivery');
  return { ...JSON.parse(message.data), sse_id: message.id } as {
    id: string;
    listener_id: string;
    event_id: string;
    event: string;
    attempt: number;
    sent_at: string;
    body: string;
    sse_id: string;
  };
}

const outcome = (key: string, listener: string, delivery: string, body: unknown) =>
  call('POST', `/_sandbox/listeners/${listener}/deliveries/${delivery}/outcome`, key, body);

const deliveriesOf = async (key: string, listener: string) =>
  (await call('GET', `/_sandbox/listeners/${listener}/deliveries`, key)).body.data as {
    id: string;
    attempt: number;
    status: string;
    error: string | null;
    event_id: string;
    next_attempt_at: string | null;
    response_status: number | null;
  }[];

describe('a listen session', () => {
  it('opens with a read-only key, lists while open, never as a webhook, and refuses bad input', async () => {
    const key = await sandbox.newAccount();
    const made = await call('POST', '/_sandbox/keys', key, { name: 'reader', scopes: ['shipments:read'] });
    const reader = made.body.value as string;
    const session = await openSession(reader, { forward_to: 'http://localhost:3000/webhooks' });
    expect(session).toEqual({
      id: expect.stringMatching(/^lsn_/),
      forward_to: 'http://localhost:3000/webhooks',
      events: expect.arrayContaining(['shipment.created', 'tracking.exception']),
      connected_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      connected: false,
    });
    expect(session.events).toHaveLength(7);
    expect((await call('GET', '/_sandbox/listeners', key)).body).toEqual({ data: [session] });
    expect((await call('GET', '/v1/webhooks', key)).body.data).toEqual([]);
    const secret = await call('GET', '/_sandbox/listen-secret', reader);
    expect(secret.body.secret).toMatch(/^whsec_[\w-]{43}$/);
    expect((await call('GET', '/_sandbox/listen-secret', key)).body.secret).toBe(secret.body.secret);

    const rates = await call('POST', '/_sandbox/keys', key, { name: 'rates', scopes: ['rates:read'] });
    const refused = await call('POST', '/_sandbox/listeners', rates.body.value, {});
    expect([refused.status, refused.body.error.code]).toEqual([403, 'insufficient_scope']);
    for (const [body, field] of [
      [{ forward_to: 'not a url' }, 'forward_to'],
      [{ forward_to: 'ftp://example.com/x' }, 'forward_to'],
      [{ forward_to: 'http://user:pw@localhost/x' }, 'forward_to'],
      [{ events: ['shipment.lost'] }, 'events.0'],
      [{ events: [] }, 'events'],
      [{ secret: 'mine' }, 'secret'],
    ] as const) {
      const answer = await fetch(`${served.origin}/_sandbox/listeners`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expectError(
        { status: answer.status, headers: answer.headers, json: await answer.json() },
        422,
        expect.any(String) as never,
        field,
      );
    }
    const unknown = await fetch(`${served.origin}/_sandbox/listeners/lsn_nope/stream`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect([unknown.status, ((await unknown.json()) as any).error.code]).toEqual([404, 'not_found']);
    // Another account's session is no one's to read.
    const other = await sandbox.newAccount();
    expect((await call('GET', `/_sandbox/listeners/${session.id}/deliveries`, other)).status).toBe(404);
  });

  it("streams each event's exact bytes, records the answer, and retries a failure on the clock", async () => {
    const key = await sandbox.newAccount();
    const other = await sandbox.newAccount();
    const session = await openSession(key, {
      forward_to: 'http://localhost:3000/webhooks',
      events: ['shipment.created'],
    });
    const stream = await streamOf(key, session.id);
    try {
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(stream.response.headers.get('x-accel-buffering')).toBe('no');
      const ready = JSON.parse((await stream.next((m) => m.event === 'ready')).data);
      expect(ready).toEqual({
        id: session.id,
        forward_to: 'http://localhost:3000/webhooks',
        events: ['shipment.created'],
        secret: (await call('GET', '/_sandbox/listen-secret', key)).body.secret,
        heartbeat_ms: HEARTBEAT_MS,
        timeout_ms: sandbox.config.webhookTimeoutMs,
      });
      expect((await call('GET', '/_sandbox/listeners', key)).body.data[0].connected).toBe(true);
      await stream.next((m) => m.event === 'comment' && m.data === 'heartbeat');

      // Another account's event, and an event the session did not ask for, never come.
      await call('POST', '/v1/shipments', other, shipmentRequest());
      await call('POST', '/_sandbox/events/trigger', key, { event: 'tracking.delivered' });
      const created = await call('POST', '/v1/shipments', key, shipmentRequest());
      const first = await nextDelivery(stream);
      const events = (await call('GET', '/_sandbox/events?event=shipment.created', key)).body.data;
      expect(first).toMatchObject({
        listener_id: session.id,
        event: 'shipment.created',
        event_id: events[0].id,
        attempt: 0,
        sse_id: first.id,
      });
      expect(JSON.parse(first.body)).toEqual(events[0]);
      expect(JSON.parse(first.body).data.id).toBe(created.body.id);

      const failed = await outcome(key, session.id, first.id, {
        response_status: 500,
        response_excerpt: 'boom',
        duration_ms: 12,
      });
      expect(failed.body).toMatchObject({
        id: first.id,
        status: 'failed',
        error: 'http',
        error_message: 'the receiver answered 500',
        response_status: 500,
        response_excerpt: 'boom',
        duration_ms: 12,
      });
      const retryAt = new Date(Date.parse(first.sent_at) + 60_000).toISOString().replace('.000Z', 'Z');
      expect(failed.body.next_attempt_at).toBe(retryAt);
      // Told again (after a reconnect, say): the first answer stands.
      const again = await outcome(key, session.id, first.id, { response_status: 200, duration_ms: 1 });
      expect(again.body.status).toBe('failed');

      // The retry is due on the account's clock: an advance hands it over and waits for its answer.
      const advance = call('POST', '/_sandbox/clock/advance', key, { by: '61s' });
      const retry = await nextDelivery(stream);
      expect(retry).toMatchObject({
        event_id: first.event_id,
        attempt: 1,
        sent_at: retryAt,
        body: first.body,
      });
      expect(
        (await outcome(key, session.id, retry.id, { response_status: 204, duration_ms: 3 })).body.status,
      ).toBe('succeeded');
      const advanced = await advance;
      expect(advanced.body.ran).toContainEqual(
        expect.objectContaining({ kind: 'listener.attempt', subject: retry.id, attempt: 1 }),
      );
      expect((await deliveriesOf(key, session.id)).map((d) => [d.attempt, d.status])).toEqual([
        [1, 'succeeded'],
        [0, 'failed'],
      ]);
      // Nothing else came down.
      expect(stream.messages.filter((m) => m.event === 'delivery')).toHaveLength(2);

      // Bad outcomes are refused with the contract's errors.
      expect(
        (await outcome(key, session.id, 'dlv_nope', { response_status: 200, duration_ms: 1 })).status,
      ).toBe(404);
      const bad = await outcome(key, session.id, retry.id, { response_status: 1000, duration_ms: 1 });
      expect([bad.status, bad.body.error.field]).toEqual([422, 'response_status']);
      const none = await outcome(key, session.id, retry.id, { response_status: null, duration_ms: 1 });
      expect([none.status, none.body.error.field]).toEqual([422, 'response_status']);
    } finally {
      stream.close();
    }
  });

  it('loses nothing when its connection comes back: what was not answered is sent again', async () => {
    const key = await sandbox.newAccount();
    const session = await openSession(key);
    const first = await streamOf(key, session.id);
    await first.next((m) => m.event === 'ready');
    await call('POST', '/_sandbox/events/trigger', key, { event: 'label.generated' });
    const unanswered = await nextDelivery(first);
    first.close();
    await vi.waitFor(async () =>
      expect((await call('GET', '/_sandbox/listeners', key)).body.data[0].connected).toBe(false),
    );
    // Raised while no connection holds the session.
    const raised = await call('POST', '/_sandbox/events/trigger', key, { event: 'label.voided' });

    const second = await streamOf(key, session.id);
    try {
      const resent = await nextDelivery(second);
      const missed = await nextDelivery(second);
      expect(resent).toEqual({ ...unanswered });
      expect(missed).toMatchObject({ event: 'label.voided', event_id: raised.body.id, attempt: 0 });
      // A print-only session's command takes a delivery by saying so.
      for (const delivery of [resent, missed])
        expect(
          (await outcome(key, session.id, delivery.id, { response_status: null, duration_ms: 0 })).body,
        ).toMatchObject({
          status: 'succeeded',
          response_status: null,
          error: null,
        });
    } finally {
      second.close();
    }
  });

  it('takes a heartbeat answered, and closes the connection of a command that stopped answering', async () => {
    const key = await sandbox.newAccount();
    const session = await openSession(key);
    const stream = await streamOf(key, session.id);
    await stream.next((m) => m.event === 'comment' && m.data === 'heartbeat');
    const answered = await call('POST', `/_sandbox/listeners/${session.id}/heartbeat`, key);
    expect(answered.body).toMatchObject({ id: session.id, connected: true });
    // The command answers nothing for longer than two and a half heartbeats (on the sandbox's clock).
    sandbox.wall.now += HEARTBEAT_MS * 3;
    await stream.ended;
    await vi.waitFor(async () =>
      expect((await call('GET', '/_sandbox/listeners', key)).body.data).toEqual([
        expect.objectContaining({ id: session.id, connected: false }),
      ]),
    );
  });

  it('is ended by a reset, which the stream says, and the secret changes', async () => {
    const key = await sandbox.newAccount();
    const before = (await call('GET', '/_sandbox/listen-secret', key)).body.secret;
    const session = await openSession(key);
    const stream = await streamOf(key, session.id);
    await stream.next((m) => m.event === 'ready');
    expect((await call('POST', '/_sandbox/reset', key)).status).toBe(200);
    expect(JSON.parse((await stream.next((m) => m.event === 'ended')).data)).toEqual({
      reason: 'the account was reset',
    });
    await stream.ended;
    expect((await call('GET', '/_sandbox/listeners', key)).body.data).toEqual([]);
    expect((await call('GET', '/_sandbox/listen-secret', key)).body.secret).not.toBe(before);
  });

  it("counts nowhere: not in the account's rate limits, its journal or its report", async () => {
    const key = await sandbox.newAccount();
    const session = await openSession(key, { forward_to: 'http://localhost:3000/hooks' });
    const stream = await streamOf(key, session.id);
    try {
      await stream.next((m) => m.event === 'ready');
      await call('POST', '/_sandbox/events/trigger', key, { event: 'tracking.exception' });
      const delivery = await nextDelivery(stream);
      // The receiver failed: that judges no client of the account.
      await outcome(key, session.id, delivery.id, { response_status: 503, duration_ms: 9000 });
      await call('POST', `/_sandbox/listeners/${session.id}/heartbeat`, key);
      await call('GET', `/_sandbox/listeners/${session.id}/deliveries`, key);

      const answer = await fetch(`${served.origin}/v1/shipments`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(answer.headers.get('x-ratelimit-remaining')).toBe(
        String(Number(answer.headers.get('x-ratelimit-limit')) - 1),
      );
      const journal = (await call('GET', '/_sandbox/requests', key)).body.data;
      expect(journal.map((entry: { path: string }) => entry.path)).toEqual(['/v1/shipments']);
      const report = (await call('GET', '/_sandbox/report', key)).body;
      const status = Object.fromEntries(
        report.checks.map((check: { id: string; status: string }) => [check.id, check.status]),
      );
      expect(status).toMatchObject({
        webhook_handler_succeeds: 'not_observed',
        webhook_handler_fast: 'not_observed',
        respects_retry_after: 'not_observed',
      });
    } finally {
      stream.close();
    }
  });

  // Moves the sandbox's wall clock past every session's grace: last.
  it('ends 10 s after its connection closed: what it still owed fails listener_gone, not retried', async () => {
    const key = await sandbox.newAccount();
    const session = await openSession(key, { forward_to: 'http://localhost:3000/hooks' });
    const stream = await streamOf(key, session.id);
    await stream.next((m) => m.event === 'ready');
    await call('POST', '/_sandbox/events/trigger', key, { event: 'shipment.cancelled' });
    const handed = await nextDelivery(stream);
    stream.close();
    await vi.waitFor(async () =>
      expect((await call('GET', '/_sandbox/listeners', key)).body.data[0].connected).toBe(false),
    );
    await call('POST', '/_sandbox/events/trigger', key, { event: 'label.voided' });

    sandbox.wall.now += 9_000;
    // Not yet: a reconnect now would still take it up.
    expect((await call('GET', '/_sandbox/listeners', key)).body.data).toHaveLength(1);
    sandbox.wall.now += 1_500;
    await vi.waitFor(
      async () => expect((await call('GET', '/_sandbox/listeners', key)).body.data).toEqual([]),
      {
        timeout: 5000,
      },
    );
    const owed = await deliveriesOf(key, session.id);
    expect(owed.map((d) => [d.status, d.error])).toEqual([
      ['failed', 'listener_gone'],
      ['failed', 'listener_gone'],
    ]);
    expect(owed.map((d) => d.next_attempt_at)).toEqual([null, null]);
    // Its answer, late, changes nothing; and the session cannot be taken up again.
    expect(
      (await outcome(key, session.id, handed.id, { response_status: 200, duration_ms: 1 })).body.status,
    ).toBe('failed');
    const late = await fetch(`${served.origin}/_sandbox/listeners/${session.id}/stream`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(late.status).toBe(404);
    expect(((await late.json()) as any).error.message).toMatch(/has ended/);
    const advanced = await call('POST', '/_sandbox/clock/advance', key, { by: '1d' });
    expect(advanced.body.ran.filter((job: { kind: string }) => job.kind === 'listener.attempt')).toEqual([]);
  });
});

describe.runIf(TEST_ENGINE === 'postgres')('listen sessions across replicas', () => {
  it('a session held by one replica gets the events raised on another, and any replica ends it', async () => {
    // Two processes sharing one database, as two replicas behind a load balancer.
    const url = await newPostgresSchema();
    const replica = async () => {
      const made = await createTestSandbox(
        {},
        { database: postgresDatabase(url, { poolSize: 4 }), listenerTiming: { heartbeatMs: HEARTBEAT_MS } },
      );
      await made.start();
      return made;
    };
    const holding = await replica();
    const other = await replica();
    const servedHolding = await serveSandbox(holding);
    const key = await holding.newAccount();
    const viaOther = async (method: string, path: string, body?: unknown) =>
      (await other.call(method, path, { key, body })).json;
    let stream: OpenStream | undefined;
    try {
      const opened = await callSandbox(servedHolding.origin, 'POST', '/_sandbox/listeners', key, {
        forward_to: 'http://localhost:3000/hooks',
      });
      const session = opened.body as { id: string };
      stream = await openStream(`${servedHolding.origin}/_sandbox/listeners/${session.id}/stream`, key);
      await stream.next((m) => m.event === 'ready');

      const shipment = await viaOther('POST', '/v1/shipments', shipmentRequest());
      const first = await nextDelivery(stream);
      expect(JSON.parse(first.body).data.id).toBe(shipment.id);
      // The answer may go to any replica; so may the advance that runs the retry.
      const failed = await viaOther(
        'POST',
        `/_sandbox/listeners/${session.id}/deliveries/${first.id}/outcome`,
        {
          response_status: 500,
          duration_ms: 4,
        },
      );
      expect(failed.status).toBe('failed');
      const advance = viaOther('POST', '/_sandbox/clock/advance', { by: '61s' });
      const retry = await nextDelivery(stream);
      expect(retry).toMatchObject({ event_id: first.event_id, attempt: 1 });
      await viaOther('POST', `/_sandbox/listeners/${session.id}/deliveries/${retry.id}/outcome`, {
        response_status: 200,
        duration_ms: 2,
      });
      expect((await advance).ran).toContainEqual(expect.objectContaining({ subject: retry.id }));

      // The holder's connection closes; the other replica's wall clock passes the 10 s and ends it.
      await viaOther('POST', '/_sandbox/events/trigger', { event: 'label.voided' });
      await nextDelivery(stream);
      stream.close();
      await vi.waitFor(async () =>
        expect((await viaOther('GET', '/_sandbox/listeners')).data[0].connected).toBe(false),
      );
      other.wall.now += 10_500;
      await vi.waitFor(async () => expect((await viaOther('GET', '/_sandbox/listeners')).data).toEqual([]), {
        timeout: 5000,
      });
      const attempts = (await viaOther('GET', `/_sandbox/listeners/${session.id}/deliveries`)).data;
      expect(attempts.map((a: { status: string; error: string | null }) => [a.status, a.error])).toEqual([
        ['failed', 'listener_gone'],
        ['succeeded', null],
        ['failed', 'http'],
      ]);
    } finally {
      stream?.close();
      await servedHolding.close();
      await Promise.all([holding.stop(), other.stop()]);
    }
  });
});

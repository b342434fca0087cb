import { type ChildProcess, spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, startPostgresServer } from '../scripts/embedded-postgres.js';
import { newPostgresSchema } from './databases.js';
import { shipmentRequest } from './helpers.js';
import { type Receiver, startReceiver } from './receiver.js';

/**
 * Several sandbox processes over one PostgreSQL database act as one sandbox: the built command, as it
 * is deployed, three (or two) at a time, with requests spread round-robin and no affinity. A server of
 * this file's own, since the last test stops and starts it.
 *
 * Leases are a second here (ten by default), so a killed replica's work changes hands within a couple
 * of seconds: the tests wait for that by watching for it, with deadlines, never by sleeping.
 */
let postgres: PostgresServer;
const running = new Set<Replica>();

beforeAll(async () => {
  postgres = await startPostgresServer();
}, 60_000);

afterEach(async () => {
  await Promise.all([...running].map((replica) => replica.stop()));
});

afterAll(async () => {
  await postgres?.stop();
});

interface Replica {
  origin: string;
  pid: number;
  /** SIGTERM, and the exit. */
  stop(): Promise<void>;
  /** SIGKILL: gone at once, without a word to the database. */
  kill(): Promise<void>;
  /** SIGSTOP: frozen, its connections open, until `resume` (SIGCONT). */
  pause(): void;
  resume(): void;
}

/**
 * A lease of 1 s lets the tests that kill a replica see its work taken over quickly; on a loaded
 * machine a replica late by as much loses its work to the others, which a test that counts who holds
 * what cannot allow, so those take the default (10 s).
 */
async function startReplica(url: string, lease = '1s'): Promise<Replica> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      'dist/main.js',
      '--database',
      url,
      '--port',
      '0',
      '--https-port',
      '0',
      '--replica-lease',
      lease,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  const ready = await new Promise<{ origin: string }>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      output += String(chunk);
      const line = output.split('\n').find((text) => text.includes('"ready":true'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`replica exited with ${code}: ${output}`)));
  });
  const replica: Replica = {
    origin: ready.origin,
    pid: child.pid as number,
    async stop() {
      running.delete(replica);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    async kill() {
      running.delete(replica);
      child.kill('SIGKILL');
      await exited;
    },
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
  };
  running.add(replica);
  return replica;
}

async function startReplicas(count: number, lease?: string): Promise<{ url: string; replicas: Replica[] }> {
  const url = await newPostgresSchema(postgres.url);
  // Started together over an empty schema: one makes the tables while the others wait.
  return { url, replicas: await Promise.all(Array.from({ length: count }, () => startReplica(url, lease))) };
}

interface Answer {
  status: number;
  json: any;
}

async function call(replica: Replica, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${replica.origin}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined } as Answer;
}

/** Each call to the next replica in turn. */
function roundRobin(replicas: Replica[], key: string) {
  let next = 0;
  return (method: string, path: string, body?: unknown) =>
    call(replicas[next++ % replicas.length] as Replica, key, method, path, body);
}

async function newAccount(replica: Replica): Promise<string> {
  const response = await fetch(`${replica.origin}/_sandbox/accounts`, { method: 'POST' });
  expect(response.status).toBe(201);
  return ((await response.json()) as { api_key: string }).api_key;
}

/** Polls `check` until it holds, for at most `ms`. */
async function eventually<T>(
  check: () => Promise<T | undefined>,
  ms: number,
  what: string | (() => string),
): Promise<T> {
  const deadline = performance.now() + ms;
  for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline)
      throw new Error(`not within ${ms} ms: ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** A frozen account with a webhook to `receiver` for every event, and `count` labelled shipments. */
async function labelledAccount(replicas: Replica[], receiver: Receiver, count: number) {
  const key = await newAccount(replicas[0] as Replica);
  const api = roundRobin(replicas, key);
  expect((await api('POST', '/_sandbox/clock', { frozen: true })).status).toBe(200);
  const webhook = await api('POST', '/v1/webhooks', {
    url: receiver.url,
    events: ['tracking.updated', 'tracking.delivered', 'tracking.exception'],
    secret: 'whsec_replicas-test-secret',
  });
  expect(webhook.status).toBe(201);
  const labels: { id: string; tracking_number: string }[] = [];
  for (let i = 0; i < count; i++) {
    const shipment = await api('POST', '/v1/shipments', shipmentRequest());
    expect(shipment.status).toBe(201);
    const label = await api('POST', '/v1/labels', { shipment_id: shipment.json.id, format: 'zpl' });
    expect(label.status).toBe(201);
    labels.push(label.json);
  }
  const clock = await api('GET', '/_sandbox/clock');
  return { key, api, labels, webhookId: webhook.json.id as string, startedAt: Date.parse(clock.json.now) };
}

/** The ids of the events each delivery the receiver got was for. */
const deliveredEventIds = (receiver: Receiver) =>
  receiver.requests.map((request) => JSON.parse(request.body.toString()).id as string);

/** The ids of the account's tracking events, as the sandbox recorded them. */
async function trackingEventIds(api: ReturnType<typeof roundRobin>): Promise<string[]> {
  const listed = await api('GET', '/_sandbox/events?limit=1000');
  expect(listed.status).toBe(200);
  return (listed.json.data as { id: string; event: string }[])
    .filter((event) => event.event.startsWith('tracking.'))
    .map((event) => event.id);
}

/** The process a replica id names (`<host>-<pid>-<random>`). */
const pidOf = (replicaId: string) => Number(replicaId.split('-').at(-2));

/** Rows of the replicas' database, read beside them. */
async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

/** The replica sending the attempt that is on the wire now, by its process id. */
async function sendingReplicaPid(url: string): Promise<number | undefined> {
  const [row] = await query<{ claimed_by: string }>(
    url,
    "SELECT claimed_by FROM webhook_attempts WHERE status = 'sending' AND claimed_by IS NOT NULL",
  );
  return row ? pidOf(row.claimed_by) : undefined;
}

/** Every tracking event of every label, as the API lists them. */
async function trackingOf(api: ReturnType<typeof roundRobin>, labels: { tracking_number: string }[]) {
  return Promise.all(
    labels.map(async (label) => {
      const tracking = await api('GET', `/v1/tracking/${label.tracking_number}`);
      expect(tracking.status).toBe(200);
      return tracking.json as { status: string; events: { status: string; occurred_at: string }[] };
    }),
  );
}

/** Tracking events with the same instant and status twice: a step that ran twice. */
const repeatedSteps = (events: { status: string; occurred_at: string }[]) =>
  events.length - new Set(events.map((event) => `${event.occurred_at} ${event.status}`)).size;

describe('three replicas over one database', () => {
  it('answer every read with the writes made through any of them, and revoke a key everywhere at once', async () => {
    const { replicas } = await startReplicas(3);
    const key = await newAccount(replicas[0] as Replica);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const writer = replicas[i % 3] as Replica;
      const created = await call(writer, key, 'POST', '/v1/shipments', shipmentRequest());
      expect(created.status).toBe(201);
      ids.push(created.json.id);
      for (const reader of replicas.filter((replica) => replica !== writer)) {
        const read = await call(reader, key, 'GET', `/v1/shipments/${created.json.id}`);
        expect([read.status, read.json]).toEqual([200, created.json]);
      }
      // A change, too, is what the next read anywhere sees.
      if (i % 4 === 0) {
        const cancelled = await call(writer, key, 'DELETE', `/v1/shipments/${created.json.id}`);
        expect(cancelled.status).toBe(200);
        const read = await call(
          replicas[(i + 1) % 3] as Replica,
          key,
          'GET',
          `/v1/shipments/${created.json.id}`,
        );
        expect(read.json.status).toBe('cancelled');
      }
    }
    for (const replica of replicas) {
      const listed = await call(replica, key, 'GET', '/v1/shipments?limit=100');
      expect(listed.json.data.map((shipment: { id: string }) => shipment.id).sort()).toEqual([...ids].sort());
    }

    // A label made through one replica downloads with the same bytes from any of them.
    const label = await call(replicas[0] as Replica, key, 'POST', '/v1/labels', {
      shipment_id: ids[1],
      format: 'pdf',
    });
    expect(label.status).toBe(201);
    const labelUrl = new URL(label.json.label_url);
    const bytes = await Promise.all(
      replicas.map(async (replica) => {
        const response = await fetch(`${replica.origin}${labelUrl.pathname}${labelUrl.search}`);
        expect(response.status).toBe(200);
        return Buffer.from(await response.arrayBuffer());
      }),
    );
    expect(bytes[0]?.subarray(0, 5).toString()).toBe('%PDF-');
    for (const other of bytes.slice(1)) expect(other?.equals(bytes[0] as Buffer)).toBe(true);

    const minted = await call(replicas[0] as Replica, key, 'POST', '/_sandbox/keys', { name: 'ci' });
    expect(minted.status).toBe(201);
    const second = minted.json.value as string;
    expect((await call(replicas[1] as Replica, second, 'GET', '/v1/shipments')).status).toBe(200);
    expect(
      (await call(replicas[2] as Replica, key, 'DELETE', `/_sandbox/keys/${minted.json.id}`)).status,
    ).toBe(200);
    for (const replica of replicas) {
      const refused = await call(replica, second, 'GET', '/v1/shipments');
      expect([refused.status, refused.json.error.code]).toEqual([401, 'invalid_api_key']);
    }
  }, 60_000);

  it('run each tracking step and send each webhook once, and two advances at once move the clock by both', async () => {
    const { replicas } = await startReplicas(3);
    const receiver = await startReceiver([200]);
    try {
      const { key, api, labels, startedAt } = await labelledAccount(replicas, receiver, 6);
      const [first, second] = await Promise.all([
        call(replicas[0] as Replica, key, 'POST', '/_sandbox/clock/advance', { by: '1h' }),
        call(replicas[1] as Replica, key, 'POST', '/_sandbox/clock/advance', { by: '1h' }),
      ]);
      expect([first.status, second.status]).toEqual([200, 200]);
      const clock = await api('GET', '/_sandbox/clock');
      expect(Date.parse(clock.json.now) - startedAt).toBe(2 * 3_600_000);

      const last = await api('POST', '/_sandbox/clock/advance', { by: '30d' });
      expect(last.status).toBe(200);
      const tracked = await trackingOf(api, labels);
      for (const tracking of tracked) {
        expect(tracking.status).toBe('delivered');
        expect(repeatedSteps(tracking.events)).toBe(0);
      }
      // An advance answers once everything due by its target ran, sends included.
      const delivered = deliveredEventIds(receiver);
      expect(delivered.length).toBe(new Set(delivered).size);
      const steps = tracked.reduce((sum, tracking) => sum + tracking.events.length, 0);
      expect(delivered.length).toBeGreaterThanOrEqual(steps - labels.length);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

describe('webhook sends across replicas', () => {
  it("hold a webhook's share of sends on the wire (4) across every replica together", async () => {
    const { url, replicas } = await startReplicas(2, '10s');
    const receiver = await startReceiver(['hang']);
    try {
      const key = await newAccount(replicas[0] as Replica);
      const api = roundRobin(replicas, key);
      expect((await api('POST', '/_sandbox/clock', { frozen: true })).status).toBe(200);
      const webhook = await api('POST', '/v1/webhooks', {
        url: receiver.url,
        events: ['shipment.created'],
        secret: 'whsec_replicas-test-secret',
      });
      expect(webhook.status).toBe(201);
      // Which replica claims a due attempt is a race; the test settles it by pausing the other one
      // (SIGSTOP) while each makes its attempts, so both hold some. The first makes four, all on the
      // wire, so it is paused idle, never inside the share's transaction, whose lock the other needs.
      // A replica is paused only once its run of the account's due work is over, too: one paused
      // mid-run keeps the account's lease, and the other runs none of the account's attempts until
      // that lapses (ten seconds), by when the paused one's sends have timed out, to be retried a
      // minute on by a clock that is frozen.
      const [first, second] = replicas as [Replica, Replica];
      let seen = '';
      const claims = async (sending: number, holders: number, onTheWire: number) =>
        eventually(
          async () => {
            const rows = await query<{ status: string; claimed_by: string | null; count: number }>(
              url,
              'SELECT status, claimed_by, count(*) AS count FROM webhook_attempts GROUP BY status, claimed_by',
            );
            const [leases] = await query<{ count: number }>(
              url,
              'SELECT count(*) AS count FROM account_leases',
            );
            const running = Number(leases?.count);
            seen = `${JSON.stringify(rows)}, ${receiver.requests.length} on the wire, ${running} runs under way`;
            const claimed = rows.filter((row) => row.status === 'sending');
            return claimed.reduce((sum, row) => sum + Number(row.count), 0) === sending &&
              new Set(claimed.map((row) => row.claimed_by)).size === holders &&
              receiver.requests.length >= onTheWire &&
              running === 0
              ? true
              : undefined;
          },
          20_000,
          () => `${sending} attempts claimed by ${holders} replicas, no run under way (saw ${seen})`,
        );
      try {
        await claims(0, 0, 0);
        second.pause();
        for (let i = 0; i < 4; i++)
          expect((await call(first, key, 'POST', '/v1/shipments', shipmentRequest())).status).toBe(201);
        await claims(4, 1, 4);
        first.pause();
        second.resume();
        for (let i = 0; i < 6; i++)
          expect((await call(second, key, 'POST', '/v1/shipments', shipmentRequest())).status).toBe(201);
        // Every attempt is being sent, by both replicas, and only four are on the wire: the receiver
        // holds them all unanswered, so the second replica's own share of four would have let it send.
        await claims(10, 2, 4);
      } finally {
        first.resume();
        second.resume();
      }
      expect(receiver.requests).toHaveLength(4);

      // Answered, the next four go out, and so on until all ten are delivered.
      receiver.reply([200]);
      receiver.release(200);
      const delivered = await eventually(
        async () => {
          const listed = await api('GET', `/_sandbox/webhooks/${webhook.json.id}/deliveries`);
          const done = listed.json.data.filter(
            (attempt: { status: string }) => attempt.status === 'succeeded',
          );
          return done.length === 10 ? done : undefined;
        },
        30_000,
        'ten deliveries',
      );
      expect(delivered).toHaveLength(10);
      expect(new Set(deliveredEventIds(receiver)).size).toBe(10);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

describe('a replica killed with kill -9', () => {
  it('loses nothing of an advance it was running: another replica finishes it, each step once', async () => {
    const { replicas } = await startReplicas(2);
    const [doomed, survivor] = replicas as [Replica, Replica];
    const receiver = await startReceiver([200]);
    try {
      const { key, labels, startedAt } = await labelledAccount([doomed], receiver, 20);
      const target = new Date(startedAt + 30 * 86_400_000).toISOString();
      const advancing = call(doomed, key, 'POST', '/_sandbox/clock/advance', { to: target }).catch(
        (error: Error) => error,
      );
      // Killed half-way: some of the account's steps ran and were sent, most did not.
      await eventually(
        async () => (receiver.requests.length >= 30 ? true : undefined),
        30_000,
        '30 deliveries',
      );
      await doomed.kill();
      expect(await advancing).toBeInstanceOf(Error);

      const onSurvivor = roundRobin([survivor], key);
      // The advance asked again, of the replica left: it waits out the dead one's lease, then runs the rest.
      const finished = await onSurvivor('POST', '/_sandbox/clock/advance', { to: target });
      expect(finished.status).toBe(200);
      for (const tracking of await trackingOf(onSurvivor, labels)) {
        expect(tracking.status).toBe('delivered');
        expect(repeatedSteps(tracking.events)).toBe(0);
      }
      // Every event reached the receiver (a send cut off by the kill may have gone twice).
      const delivered = new Set(deliveredEventIds(receiver));
      expect((await trackingEventIds(onSurvivor)).filter((id) => !delivered.has(id))).toEqual([]);
    } finally {
      await receiver.close();
    }
  }, 90_000);

  it('has the webhook send it was making taken over and sent again within seconds', async () => {
    const { url, replicas } = await startReplicas(2);
    // The first delivery is held unanswered: its sender dies with it on the wire.
    const receiver = await startReceiver(['hang', 200]);
    try {
      const key = await newAccount(replicas[0] as Replica);
      const api = roundRobin(replicas, key);
      const webhook = await api('POST', '/v1/webhooks', {
        url: receiver.url,
        events: ['shipment.created'],
        secret: 'whsec_replicas-test-secret',
      });
      expect(webhook.status).toBe(201);
      const first = receiver.nextRequest();
      expect((await api('POST', '/v1/shipments', shipmentRequest())).status).toBe(201);
      const held = await first;
      const senderPid = await eventually(() => sendingReplicaPid(url), 10_000, 'the sending replica');
      const sender = replicas.find((replica) => replica.pid === senderPid) as Replica;
      const other = replicas.find((replica) => replica !== sender) as Replica;

      const again = receiver.nextRequest();
      const killedAt = performance.now();
      await sender.kill();
      const resent = await again;
      expect(performance.now() - killedAt).toBeLessThan(30_000);
      expect(JSON.parse(resent.body.toString()).id).toBe(JSON.parse(held.body.toString()).id);

      const deliveries = await eventually(
        async () => {
          const listed = await call(other, key, 'GET', `/_sandbox/webhooks/${webhook.json.id}/deliveries`);
          return listed.json.data.some((attempt: { status: string }) => attempt.status === 'succeeded')
            ? listed.json.data
            : undefined;
        },
        10_000,
        'the delivery recorded as succeeded',
      );
      expect(deliveries).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

describe('the database restarting under the replicas', () => {
  it('answers 503 while it is down, and the same replicas serve again once it is back', async () => {
    const { replicas } = await startReplicas(2);
    const key = await newAccount(replicas[0] as Replica);
    const created = await call(replicas[1] as Replica, key, 'POST', '/v1/shipments', shipmentRequest());
    expect(created.status).toBe(201);

    await postgres.halt();
    for (const replica of replicas) {
      const started = performance.now();
      const refused = await call(replica, key, 'GET', `/v1/shipments/${created.json.id}`);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect([refused.status, refused.json.error.code]).toEqual([503, 'service_unavailable']);
      expect((await fetch(`${replica.origin}/healthz`)).status).toBe(503);
    }

    await postgres.start();
    for (const replica of replicas) {
      const read = await eventually(
        async () => {
          const answer = await call(replica, key, 'GET', `/v1/shipments/${created.json.id}`);
          return answer.status === 200 ? answer : undefined;
        },
        20_000,
        'the replica serving again',
      );
      expect(read.json).toEqual(created.json);
      expect((await call(replica, key, 'POST', '/v1/shipments', shipmentRequest())).status).toBe(201);
    }
  }, 60_000);
});

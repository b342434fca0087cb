import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { postgresDatabase } from '../src/db/postgres.js';
import type { Sql } from '../src/db/sql.js';
import type { JournaledRequest } from '../src/journal/journal.js';
import { PostgresJournal } from '../src/journal/postgres-journal.js';
import { PostgresObservations, SETTLE_MS } from '../src/report/postgres-observations.js';
import type { Report } from '../src/report/schema.js';
import { type RunningServer, startServer } from '../src/server.js';
import { newPostgresSchema, TEST_ENGINE } from './databases.js';
import { journaledRequest } from './helpers.js';
import { openStream } from './sse.js';

/**
 * Two replicas over one PostgreSQL schema, as a load balancer without affinity spreads a client over
 * them, over real HTTP on loopback: the rate limits count both replicas' requests exactly, and the
 * journal, its stream, the integration report and a reset are the same whichever replica answers.
 * Another replica's requests show within its flush interval: the tests poll with a deadline.
 */
describe.runIf(TEST_ENGINE === 'postgres')('two replicas over one PostgreSQL database', () => {
  let replicas: [RunningServer, RunningServer];
  let database: string;
  beforeAll(async () => {
    database = await newPostgresSchema();
    // One after the other: the first makes the tables.
    const first = await startServer(testConfig({ database }), undefined, { https: false });
    const second = await startServer(testConfig({ database }), undefined, { https: false });
    replicas = [first, second];
  });
  afterAll(() => Promise.all(replicas.map((replica) => replica.close())));

  /** A call through the `n`th request's replica, round-robin. */
  async function call(n: number, method: string, path: string, key: string, body?: unknown) {
    const replica = replicas[n % 2] as RunningServer;
    const response = await fetch(`${replica.origin}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
  }

  /** A new starter account (60 requests a minute) whose clock is frozen, so its minute cannot end mid-test. */
  async function starterAccount(): Promise<string> {
    const made = await fetch(`${replicas[0].origin}/_sandbox/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'starter' }),
    });
    expect(made.status).toBe(201);
    const key = ((await made.json()) as { api_key: string }).api_key;
    expect((await call(1, 'POST', '/_sandbox/clock', key, { frozen: true })).status).toBe(200);
    return key;
  }

  /**
   * A journal and the report's observations on a connection of their own, for a new account, with a
   * wall clock the test moves; `request` makes a note answered at a wall-clock time.
   */
  async function foldingByWallClock() {
    const key = await starterAccount();
    const accountId = (await call(0, 'GET', '/_sandbox/account', key)).json.id as string;
    const db = postgresDatabase(database, { poolSize: 2 });
    const silent = pino({ level: 'silent' });
    const journal = new PostgresJournal(db.sql, silent);
    const wall = { now: 1_000_000 };
    const observations = new PostgresObservations(db.sql, journal, silent, () => wall.now);
    const request = (answeredWallAt: number): JournaledRequest =>
      journaledRequest({
        id: `req_${answeredWallAt}`,
        at: answeredWallAt - 1,
        answeredWallAt,
        keyId: 'key_a',
      });
    const close = async () => {
      await Promise.all([journal.close(), observations.close()]);
      await db.close();
    };
    return { accountId, journal, observations, request, wall, close };
  }

  /** Asks `read` again until `done` holds of its answer, for at most five seconds. */
  async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > deadline) return value;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  const journalOn = async (n: number, key: string) =>
    (await call(n, 'GET', '/_sandbox/requests?limit=1000', key)).json.data as {
      path: string;
      query: string;
    }[];
  const reportOn = async (n: number, key: string) =>
    (await call(n, 'GET', '/_sandbox/report', key)).json as Report;
  const statusOf = (report: Report, id: string) => report.checks.find((check) => check.id === id)?.status;

  it("counts both replicas' requests against the account's ceiling, exactly, under concurrency", async () => {
    const key = await starterAccount();
    const answers = await Promise.all(
      Array.from({ length: 90 }, (_, n) => call(n, 'GET', '/v1/shipments?limit=1', key)),
    );
    const allowed = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(allowed).toHaveLength(60);
    expect(refused).toHaveLength(30);
    // Each allowed request saw its own count: 59 left down to 0, each once, whichever replica answered.
    const remaining = allowed.map((answer) => Number(answer.headers.get('x-ratelimit-remaining')));
    expect(remaining.sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, n) => n));
    const resets = new Set(answers.map((answer) => answer.headers.get('x-ratelimit-reset')));
    expect(resets.size).toBe(1);
    for (const answer of refused) {
      expect(answer.json.error.code).toBe('rate_limit_exceeded');
      expect(answer.headers.get('x-ratelimit-limit')).toBe('60');
      expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });

  it("with limits off, counts in memory and brings in the other replica's counts, then decides on them once on", async () => {
    const key = await starterAccount();
    expect((await call(0, 'POST', '/_sandbox/account', key, { rate_limits: false })).status).toBe(200);
    const remaining = (answer: { headers: Headers }) => Number(answer.headers.get('x-ratelimit-remaining'));
    // Each replica counts its own at once: 59, 58, 57 on one while the other's are not yet in.
    const onFirst = [];
    for (let n = 0; n < 3; n++) onFirst.push(remaining(await call(0, 'GET', '/v1/shipments?limit=1', key)));
    expect(onFirst).toEqual([59, 58, 57]);
    for (let n = 0; n < 40; n++)
      expect((await call(1, 'GET', '/v1/shipments?limit=1', key)).status).toBe(200);
    // Within the flush interval, each sees all 43 (and the request that asks).
    const seen = await eventually(
      async () => remaining(await call(0, 'GET', '/v1/shipments?limit=1', key)),
      (left) => left <= 60 - 44,
    );
    expect(seen).toBeLessThanOrEqual(60 - 44);
    expect(seen).toBeGreaterThanOrEqual(60 - 44 - 5);

    // Limits on again: the ceiling counts every request made while they were off.
    expect((await call(1, 'POST', '/_sandbox/account', key, { rate_limits: true })).status).toBe(200);
    const counted = 60 - seen;
    const answers = [];
    for (let n = 0; n < 60 - counted + 2; n++)
      answers.push(await call(n, 'GET', '/v1/shipments?limit=1', key));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(60 - counted);
    expect(answers.slice(-2).map((answer) => answer.status)).toEqual([429, 429]);
  });

  it("lists every replica's requests on either, in the order they were answered", async () => {
    const key = await starterAccount();
    for (let n = 0; n < 6; n++)
      expect((await call(n, 'GET', `/v1/shipments?limit=${n + 1}`, key)).status).toBe(200);
    const queries = Array.from({ length: 6 }, (_, n) => `limit=${6 - n}`);
    for (const n of [0, 1]) {
      const listed = await eventually(
        () => journalOn(n, key),
        (entries) => entries.length >= 6,
      );
      expect(listed.map((entry) => entry.query)).toEqual(queries);
    }
  });

  it('streams on one replica the requests made on the other', async () => {
    const key = await starterAccount();
    const stream = await openStream(`${replicas[0].origin}/_sandbox/requests/stream`, key);
    try {
      expect(stream.status).toBe(200);
      await stream.next((message) => message.event === 'comment' && message.data === 'listening');
      expect((await call(1, 'GET', '/v1/shipments?limit=7', key)).status).toBe(200);
      expect((await call(0, 'GET', '/v1/shipments?limit=8', key)).status).toBe(200);
      expect((await call(1, 'GET', '/v1/shipments?limit=9', key)).status).toBe(200);
      await stream.next((message) => message.event === 'request' && message.data.includes('limit=9'));
      const streamed = stream.seen.filter((message) => message.event === 'request');
      expect(streamed.map((message) => JSON.parse(message.data).query).sort()).toEqual([
        'limit=7',
        'limit=8',
        'limit=9',
      ]);
    } finally {
      stream.close();
    }
  });

  it('judges a 429 taken on one replica and an early retry on the other, and a reset on one clears both', async () => {
    const key = await starterAccount();
    let n = 0;
    while ((await call(0, 'GET', '/v1/shipments?limit=1', key)).status === 200) n += 1;
    expect(n).toBe(60);
    // At once, on the other replica: well before Retry-After.
    expect((await call(1, 'GET', '/v1/shipments?limit=1', key)).status).toBe(429);
    for (const replica of [1, 0]) {
      const report = await eventually(
        () => reportOn(replica, key),
        (read) => statusOf(read, 'respects_retry_after') === 'fail',
      );
      expect(statusOf(report, 'respects_retry_after')).toBe('fail');
    }
    expect(await journalOn(0, key)).toHaveLength(62);

    expect((await call(1, 'POST', '/_sandbox/reset', key, {})).status).toBe(200);
    for (const replica of [0, 1]) {
      expect(await journalOn(replica, key)).toEqual([]);
      expect(statusOf(await reportOn(replica, key), 'respects_retry_after')).toBe('not_observed');
    }
    // The ceiling's count went too: the next request is the window's first.
    const next = await call(0, 'GET', '/v1/shipments?limit=1', key);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('59');
    expect(
      await eventually(
        () => journalOn(1, key),
        (entries) => entries.length > 0,
      ),
    ).toHaveLength(1);
  });

  it('takes in a note that another replica committed after a later one was folded, at the next fold', async () => {
    const key = await starterAccount();
    const accountId = (await call(0, 'GET', '/_sandbox/account', key)).json.id as string;
    const db = postgresDatabase(database, { poolSize: 2 });
    const silent = pino({ level: 'silent' });
    const [onA, onB] = [new PostgresJournal(db.sql, silent), new PostgresJournal(db.sql, silent)];
    // Every note below has settled: the wall clock is long past them.
    const observations = new PostgresObservations(db.sql, onA, silent, () => 1_000_000);
    const request = (keyId: string, wallAt: number, status = 200): JournaledRequest =>
      journaledRequest({
        id: `req_${keyId}_${wallAt}`,
        at: wallAt,
        answeredWallAt: wallAt + 1,
        keyId,
        status,
        code: status === 429 ? 'rate_limit_exceeded' : null,
        retryAfter: status === 429 ? 60 : null,
      });

    try {
      // B answers a 429 first, but writes it only after A's later request has been folded (recorded
      // on B only then, so that B's own flush timer cannot write it sooner).
      onA.record(accountId, request('key_a', 5000));
      expect((await observations.of(accountId)).requests).toBe(1);
      onB.record(accountId, request('key_b', 1000, 429));
      await onB.flush();
      onA.record(accountId, request('key_b', 2000));
      const folded = await observations.of(accountId);
      expect(folded.requests).toBe(3);
      expect(folded.earlyAfter429.count).toBe(1);
      expect(folded.earlyAfter429.kept[0]?.first.id).toBe('req_key_b_1000');
      // Folded once: a fold of nothing new changes nothing.
      expect(await observations.of(accountId)).toEqual(folded);
    } finally {
      await Promise.all([onA.close(), onB.close(), observations.close()]);
      await db.close();
    }
  });

  it('writes a batch of requests as they were, line breaks, quotes, commas and backslashes in them', async () => {
    const key = await starterAccount();
    const accountId = (await call(0, 'GET', '/_sandbox/account', key)).json.id as string;
    const db = postgresDatabase(database, { poolSize: 1 });
    const journal = new PostgresJournal(db.sql, pino({ level: 'silent' }));
    const now = Date.now();
    const awkward = journaledRequest({
      id: 'req_awkward',
      path: '/v1/shipments/"a",\\b',
      query: 'q=1,2&r="x"',
      status: 422,
      code: 'invalid_field',
      field: 'line\nbreak, "quoted" \\ and \u2028',
      at: now,
    });
    const plain = journaledRequest({ id: 'req_plain', at: now + 1 });
    try {
      journal.record(accountId, awkward);
      journal.record(accountId, plain);
      const [second, first] = await journal.recent(accountId, 2);
      expect(second).toMatchObject({ id: 'req_plain' });
      expect(first).toMatchObject({
        id: 'req_awkward',
        path: awkward.path,
        query: awkward.query,
        field: awkward.field,
      });
    } finally {
      await journal.close();
      await db.close();
    }
  });

  it('takes a settled note in only after the unsettled one written before it, each once', async () => {
    const { accountId, journal, observations, request, wall, close } = await foldingByWallClock();

    try {
      // Written in this order: one answered just now, then one a replica answered long ago and wrote late.
      journal.record(accountId, request(wall.now - 10));
      journal.record(accountId, request(wall.now - SETTLE_MS - 5));
      await journal.flush();
      expect((await observations.fold(accountId, false)).requests).toBe(0);
      wall.now += SETTLE_MS;
      const folded = await observations.fold(accountId, false);
      expect(folded.requests).toBe(2);
      expect(await observations.of(accountId)).toEqual(folded);
    } finally {
      await close();
    }
  });

  // A settled note and a newer one, written as notes are, long before they settle. In two batches (two
  // rows), the background takes in the settled note only, the newer one neither folded nor read; in one
  // batch (one row), neither until both have settled. A report reads what is not taken in on top.
  it.each([
    {
      batches: 2,
      foldedFirst: 1,
      title: 'folds in the background only what has settled, and a report reads the newer notes on top',
    },
    {
      batches: 1,
      foldedFirst: 0,
      title: "takes in a batch's row once all its notes have settled, and none of them before",
    },
  ])('$title', async ({ batches, foldedFirst }) => {
    const { accountId, journal, observations, request, wall, close } = await foldingByWallClock();

    try {
      journal.record(accountId, request(wall.now - SETTLE_MS - 1));
      if (batches === 2) await journal.flush();
      journal.record(accountId, request(wall.now - 10));
      await journal.flush();
      expect((await observations.fold(accountId, false)).requests).toBe(foldedFirst);
      expect((await observations.of(accountId)).requests).toBe(2);
      wall.now += SETTLE_MS;
      expect((await observations.fold(accountId, false)).requests).toBe(2);
      expect((await observations.of(accountId)).requests).toBe(2);
    } finally {
      await close();
    }
  });

  it("lists an account's newest requests across replicas' batches, and keeps the last 1,000 once taken in", async () => {
    const { accountId, journal, observations, request, wall, close } = await foldingByWallClock();
    const db = postgresDatabase(database, { poolSize: 1 });
    const other = new PostgresJournal(db.sql, pino({ level: 'silent' }));
    const rows = () =>
      db.sql.value<number>(
        'SELECT count(*)::int FROM request_journal j JOIN account_keys k ON k.key = j.account_key WHERE k.account_id = @accountId',
        { accountId },
      );
    const answered = (entries: { id: string }[]) => entries.map((entry) => Number(entry.id.slice(4)));

    try {
      // Two replicas' batches of the same moments, interleaved: this one answers the even
      // milliseconds, the other the odd ones; 1,200 requests in 12 batches of 100 (50 a replica).
      const start = wall.now - 100_000;
      for (let batch = 0; batch < 12; batch++) {
        for (let n = 0; n < 100; n++) {
          const at = start + batch * 100 + n;
          (at % 2 === 0 ? journal : other).record(accountId, request(at));
        }
        await Promise.all([journal.flush(), other.flush()]);
      }
      expect(await rows()).toBe(24);
      const newest = start + 1199;
      expect(answered(await journal.recent(accountId, 3))).toEqual([newest, newest - 1, newest - 2]);
      const listed = answered(await other.recent(accountId, 1000));
      expect(listed).toEqual(Array.from({ length: 1000 }, (_, n) => newest - n));

      // Taken in, the rows that hold none of the newest 1,000 go; the newest 1,000 stay listed.
      expect((await observations.fold(accountId, false)).requests).toBe(1200);
      expect(await rows()).toBe(20);
      expect(answered(await journal.recent(accountId, 1000))).toEqual(listed);
    } finally {
      await other.close();
      await db.close();
      await close();
    }
  });

  it('leaves out of a fold in the background a row written between its two reads', async () => {
    const { accountId, journal, request, wall, close } = await foldingByWallClock();
    const db = postgresDatabase(database, { poolSize: 2 });
    const silent = pino({ level: 'silent' });
    // A fold whose read of the rows comes just after another replica has written a row of now.
    let written = false;
    const writeFirst = (tx: Sql): Sql =>
      new Proxy(tx, {
        get(target, name, receiver) {
          if (name !== 'all') return Reflect.get(target, name, receiver);
          return async (text: string, params: never) => {
            if (!written && text.includes('seq > @after')) {
              written = true;
              journal.record(accountId, request(wall.now - 10));
              await journal.flush();
            }
            return target.all(text, params);
          };
        },
      });
    const sql = new Proxy(db.sql, {
      get(target, name, receiver) {
        if (name !== 'transaction') return Reflect.get(target, name, receiver);
        return <T>(work: (tx: Sql) => Promise<T>) => target.transaction((tx) => work(writeFirst(tx)));
      },
    });
    const observations = new PostgresObservations(sql, journal, silent, () => wall.now);

    try {
      journal.record(accountId, request(wall.now - SETTLE_MS - 1));
      await journal.flush();
      // The settled note only: the one answered just now is not taken in for good, nor read.
      expect((await observations.fold(accountId, false)).requests).toBe(1);
      expect(written).toBe(true);
      // Another replica's note answered before it, written late, is taken in before it.
      journal.record(accountId, request(wall.now - 20));
      await journal.flush();
      wall.now += SETTLE_MS;
      const folded = await observations.fold(accountId, false);
      expect(folded.requests).toBe(3);
      expect(await observations.of(accountId)).toEqual(folded);
    } finally {
      await observations.close();
      await db.close();
      await close();
    }
  });
});

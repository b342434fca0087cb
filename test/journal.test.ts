import { createHash } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ACCOUNT } from '../src/accounts/default-account.js';
import { testConfig } from '../src/config/index.js';
import { postgresDatabase } from '../src/db/postgres.js';
import { MemoryJournal, NotedRequest } from '../src/journal/journal.js';
import { PostgresJournal } from '../src/journal/postgres-journal.js';
import { sandboxSchema } from '../src/wiring.js';
import { newPostgresSchema, TEST_ENGINE } from './databases.js';
import { createTestSandbox, expectError, journaledRequest } from './helpers.js';

const entry = (n: number) => ({
  id: `req_${n}`,
  method: 'GET',
  path: `/v1/shipments/${n}`,
  query: '',
  status: 200,
  code: null,
  field: null,
  durationMs: 1,
  at: Date.UTC(2026, 10, 22, 8, 0, n % 60),
  wallAt: Date.UTC(2026, 10, 22, 8, 0, n % 60),
  answeredWallAt: Date.UTC(2026, 10, 22, 8, 0, n % 60),
  keyId: 'key_a',
  keyRevoked: false,
  retryAfter: null,
  bodySha256: null,
});

describe('request journal', () => {
  it('keeps the last 1,000 requests of an account, newest first, once it has wrapped round', async () => {
    const journal = new MemoryJournal();
    for (let n = 0; n < 1005; n++) journal.record('acc_a', entry(n));
    journal.record('acc_b', entry(7));

    const all = await journal.recent('acc_a', 5000);
    expect(all).toHaveLength(1000);
    expect(all[0]?.path).toBe('/v1/shipments/1004');
    expect(all[999]?.path).toBe('/v1/shipments/5');
    expect(all[0]?.at).toBe('2026-11-22T08:00:44Z');
    expect((await journal.recent('acc_a', 2)).map((e) => e.path)).toEqual([
      '/v1/shipments/1004',
      '/v1/shipments/1003',
    ]);
    expect((await journal.recent('acc_b', 10)).map((e) => e.path)).toEqual(['/v1/shipments/7']);
  });

  it('answers before it has wrapped, and forgets an account', async () => {
    const journal = new MemoryJournal();
    for (let n = 0; n < 3; n++) journal.record('acc_a', entry(n));
    expect((await journal.recent('acc_a', 10)).map((e) => e.path)).toEqual([
      '/v1/shipments/2',
      '/v1/shipments/1',
      '/v1/shipments/0',
    ]);
    journal.forget('acc_a');
    expect(await journal.recent('acc_a', 10)).toEqual([]);
    expect(await journal.recent('acc_unknown', 10)).toEqual([]);
  });
});

describe('requests as the middleware notes them', () => {
  const noted = (n: number) => {
    const { id: _, ...request } = entry(n);
    return new NotedRequest({
      ...request,
      method: 'POST',
      bodySha256: createHash('sha256').update(String(n)).digest('hex'),
    });
  };

  it('are named alike by the journal and by the entry its listeners hear of, whichever is read first', async () => {
    const journal = new MemoryJournal();
    const heard: NotedRequest[] = [];
    journal.observe((_, request) => heard.push(request as NotedRequest));
    for (let n = 0; n < 1500; n++) journal.record('acc_a', noted(n));
    const readFirst = heard[1400]?.id;

    const listed = await journal.recent('acc_a', 1000);
    expect(listed[99]?.id).toBe(readFirst);
    expect(listed.map((e) => e.id)).toEqual(
      heard
        .slice(500)
        .reverse()
        .map((request) => request.id),
    );
    expect(new Set(listed.map((e) => e.id)).size).toBe(1000);
    // Named by the journal while it kept them, read from the entry once the journal has moved on.
    for (let n = 1500; n < 2600; n++) journal.record('acc_a', noted(n));
    expect(heard[600]?.id).toBe(listed[899]?.id);

    const [latest] = await journal.recent('acc_a', 1);
    expect(latest).toMatchObject({
      id: expect.stringMatching(/^req_[0-9A-HJKMNP-TV-Z]{26}$/),
      method: 'POST',
      path: '/v1/shipments/2599',
      duration_ms: 1,
      body_sha256: createHash('sha256').update('2599').digest('hex'),
    });
    expect(JSON.parse(JSON.stringify(heard[2599]))).toMatchObject({
      id: latest?.id,
      bodySha256: latest?.body_sha256,
    });
  });

  it('keep a hash that is not hex, and no hash, as they were', async () => {
    const journal = new MemoryJournal();
    journal.record('acc_a', { ...entry(1), bodySha256: 'not hex' });
    journal.record('acc_a', { ...entry(2), bodySha256: null });
    expect((await journal.recent('acc_a', 2)).map((e) => [e.id, e.body_sha256])).toEqual([
      ['req_2', null],
      ['req_1', 'not hex'],
    ]);
  });
});

describe('journal entries of the API', () => {
  it('name each request, its key, both clocks, its error code, Retry-After and the hash of its body', async () => {
    const sandbox = await createTestSandbox();
    await sandbox.call('POST', '/_sandbox/clock', { body: { speed: 60 } });
    sandbox.wall.now += 1000;
    const body = JSON.stringify({ url: 'http://127.0.0.1:9/hooks', events: [] });
    expectError(await sandbox.call('POST', '/v1/webhooks', { body }), 422, 'invalid_field', 'events');
    await sandbox.call('POST', '/_sandbox/faults', {
      body: { method: 'GET', path: '/v1/shipments', status: 429, retry_after: 30, times: 1 },
    });
    expect((await sandbox.call('GET', '/v1/shipments?limit=2')).status).toBe(429);

    const [refused, posted] = (await sandbox.call('GET', '/_sandbox/requests')).json.data;
    expect(posted).toEqual({
      id: expect.stringMatching(/^req_[0-9A-HJKMNP-TV-Z]{26}$/),
      method: 'POST',
      path: '/v1/webhooks',
      query: '',
      status: 422,
      code: 'invalid_field',
      field: 'events',
      duration_ms: expect.any(Number),
      // The account's clock runs 60 times faster than the wall clock: a second is a minute.
      at: '2026-11-22T08:01:00Z',
      wall_at: '2026-11-22T08:00:01Z',
      key_id: DEFAULT_ACCOUNT.api_key.id,
      key_revoked: false,
      retry_after: null,
      body_sha256: createHash('sha256').update(body).digest('hex'),
    });
    expect(refused).toMatchObject({ status: 429, query: 'limit=2', retry_after: 30, body_sha256: null });
    expect(refused.id).not.toBe(posted.id);
  });

  it("journals a request refused for a revoked key in the key's account, and keeps nothing of unknown keys", async () => {
    const sandbox = await createTestSandbox();
    const account = await sandbox.newAccount();
    const made = await sandbox.call('POST', '/_sandbox/keys', { key: account, body: { name: 'old' } });
    await sandbox.call('DELETE', `/_sandbox/keys/${made.json.id}`, { key: account });
    expectError(await sandbox.call('GET', '/v1/shipments', { key: made.json.value }), 401, 'invalid_api_key');
    // Unknown and malformed keys belong to no account: nothing is journaled for them anywhere.
    expectError(
      await sandbox.call('GET', '/v1/shipments', { key: `svc_test_${'0'.repeat(32)}` }),
      401,
      'invalid_api_key',
    );
    expectError(await sandbox.call('GET', '/v1/shipments', { key: 'nonsense' }), 401, 'invalid_api_key');

    const journal = (await sandbox.call('GET', '/_sandbox/requests', { key: account })).json.data;
    expect(journal).toEqual([
      expect.objectContaining({
        key_id: made.json.id,
        key_revoked: true,
        status: 401,
        code: 'invalid_api_key',
      }),
    ]);
    expect((await sandbox.call('GET', '/_sandbox/requests')).json.data).toEqual([]);
  });
});

describe.runIf(TEST_ENGINE === 'postgres')(
  "the journal's rows over PostgreSQL, from before folds kept a seq",
  () => {
    it('keep what was marked taken in as taken in, and what was not as still to take in', async () => {
      const url = await newPostgresSchema();
      const owners = sandboxSchema(testConfig());
      const untilMarks = owners.map((owner) =>
        owner.name === 'journal'
          ? { ...owner, migrations: { ...owner.migrations, postgres: owner.migrations.postgres.slice(0, 2) } }
          : owner,
      );
      const earlier = postgresDatabase(url, { poolSize: 1 });
      try {
        await earlier.migrate(untilMarks);
        await earlier.sql.run(
          `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed,
           clock_frozen, default_scenario) VALUES ('acct_a', 'a', 'starter', 0, 0, 0, 1, 0, 'standard')`,
        );
        // Four requests in the order written; the first and the third taken in (the second written late).
        for (const [n, folded] of [
          [1, true],
          [2, false],
          [3, true],
          [4, false],
        ] as const)
          await earlier.sql.run(
            `INSERT INTO request_journal (account_key, answered_wall_at, request, folded)
           SELECT key, @n, @request, @folded FROM account_keys WHERE account_id = 'acct_a'`,
            { n, folded, request: JSON.stringify(journaledRequest({ id: `req_${n}`, at: n })) },
          );
      } finally {
        await earlier.close();
      }

      const database = postgresDatabase(url, { poolSize: 1 });
      const journal = new PostgresJournal(database.sql, pino({ level: 'silent' }));
      try {
        await database.migrate(owners);
        const { settled } = await database.sql.transaction((tx) =>
          journal.unfolded(tx, 'acct_a', 1_000, true),
        );
        // Past the last row marked: the one written late before it is left out of the report.
        expect(settled.map((row) => row.request.id)).toEqual(['req_4']);
        expect(
          await database.sql.all(
            'SELECT k.account_id, f.through_seq FROM request_journal_folds f JOIN account_keys k ON k.key = f.account_key',
          ),
        ).toEqual([{ account_id: 'acct_a', through_seq: 3 }]);
      } finally {
        await journal.close();
        await database.close();
      }
    });
  },
);

describe.runIf(TEST_ENGINE === 'postgres')("an account's listing over PostgreSQL", () => {
  it("reads the account's rows, not every account's", async () => {
    const url = await newPostgresSchema();
    const database = postgresDatabase(url, { poolSize: 1 });
    // The listing's statements, as the journal sends them.
    const sent: { sql: string; params: unknown }[] = [];
    const sql = new Proxy(database.sql, {
      get(target, name, receiver) {
        if (name !== 'all') return Reflect.get(target, name, receiver);
        return (text: string, params: unknown) => {
          sent.push({ sql: text, params });
          return target.all(text, params as never);
        };
      },
    });
    const journal = new PostgresJournal(sql, pino({ level: 'silent' }));
    try {
      await database.migrate(sandboxSchema(testConfig()));
      for (const id of ['acct_a', 'acct_b', 'acct_c', 'acct_d'])
        await database.sql.run(
          `INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed,
           clock_frozen, default_scenario) VALUES (@id, 'a', 'starter', 0, 0, 0, 1, 0, 'standard')`,
          { id },
        );
      // Each account a row a moment, for 2,000 moments: the listing needs a few hundred of acct_a's.
      await database.sql.run(
        `INSERT INTO request_journal (account_key, first_answered_wall_at, last_answered_wall_at, entries, requests)
         SELECT k.key, n, n, 1, @request FROM account_keys k, generate_series(1, 2000) n`,
        { request: JSON.stringify(journaledRequest({ id: 'req_1', at: 1 })) },
      );
      await database.sql.run('ANALYZE request_journal');
      expect(await journal.recent('acct_a', 100)).toHaveLength(100);
      const listing = sent.find(({ sql: text }) => text.includes('requests'));
      if (!listing) throw new Error('no listing was sent');
      const [plan] = await database.sql.column<unknown>(
        `EXPLAIN (FORMAT JSON) ${listing.sql}`,
        listing.params as never,
      );
      const scans: string[] = [];
      const walk = (node: { 'Node Type': string; 'Relation Name'?: string; Plans?: unknown[] }) => {
        if (node['Relation Name'] === 'request_journal') scans.push(node['Node Type']);
        for (const child of node.Plans ?? []) walk(child as typeof node);
      };
      walk((plan as [{ Plan: Parameters<typeof walk>[0] }])[0].Plan);
      expect(scans.length).toBeGreaterThan(0);
      expect(scans).not.toContain('Seq Scan');
    } finally {
      await journal.close();
      await database.close();
    }
  });
});

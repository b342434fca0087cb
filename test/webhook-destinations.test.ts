import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../src/config/index.js';
import { LEGACY_MIGRATIONS } from '../src/db/legacy-migrations.js';
import { generateLocalhostCertificate } from '../src/http/https.js';
import type { ResolvedAddress, ResolveHost } from '../src/webhooks/send.js';
import {
  createTestSandbox,
  DEFAULT_KEY,
  expectError,
  openMigratedDatabase,
  type TestSandbox,
} from './helpers.js';
import { type Receiver, type Reply, startFloodingReceiver, startReceiver } from './receiver.js';

const SECRET = 'whsec_0123456789abcdef';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(replies: Reply[] = [200], options: Parameters<typeof startReceiver>[1] = {}) {
  const started = await startReceiver(replies, options);
  cleanups.push(() => started.close());
  return started;
}

/** A sandbox whose accounts' clocks are frozen, so only an advance runs deliveries. */
async function sandboxWith(overrides: Partial<Config> = {}, resolveHost?: ResolveHost) {
  const sandbox = await createTestSandbox(overrides, { resolveHost });
  await sandbox.call('POST', '/_sandbox/clock', { body: { frozen: true } });
  return sandbox;
}

/** A resolver that knows a few names, and counts how often each was asked. */
function fakeResolver(names: Record<string, string[] | (() => string[])>) {
  const asked: string[] = [];
  const resolve: ResolveHost = async (hostname) => {
    asked.push(hostname);
    const entry = names[hostname];
    const addresses = typeof entry === 'function' ? entry() : entry;
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, asked };
}

const registerBody = (url: string) => ({ url, events: ['shipment.created'], secret: SECRET });

async function register(sandbox: TestSandbox, url: string, key?: string) {
  const response = await sandbox.call('POST', '/v1/webhooks', { key, body: registerBody(url) });
  expect(response.status, response.text).toBe(201);
  return response.json as { id: string };
}

const advance = (sandbox: TestSandbox, key?: string) =>
  sandbox.call('POST', '/_sandbox/clock/advance', { key, body: { by: 0 } });

const attemptsOf = async (sandbox: TestSandbox, webhookId: string, key?: string) =>
  (await sandbox.call('GET', `/_sandbox/webhooks/${webhookId}/deliveries`, { key })).json.data as any[];

/** Registers a webhook, records one event and sends it: the first attempt, as the delivery log shows it. */
async function deliverOnce(sandbox: TestSandbox, url: string) {
  const hook = await register(sandbox, url);
  await sandbox.newShipment();
  await advance(sandbox);
  const attempt = (await attemptsOf(sandbox, hook.id)).find((a) => a.attempt === 0);
  return { hook, attempt };
}

describe('registration refuses destinations that are never reachable', () => {
  const ALWAYS_REFUSED: [string, string, string][] = [
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254', 'link-local'],
    ['https://2852039166/', '169.254.169.254', 'link-local'],
    ['https://0xA9FEA9FE/', '169.254.169.254', 'link-local'],
    ['https://0251.0376.0251.0376/', '169.254.169.254', 'link-local'],
    ['https://169.254.43518/', '169.254.169.254', 'link-local'],
    ['https://169.254.169.254./', '169.254.169.254', 'link-local'],
    ['https://169.254.170.2/v2/credentials', '169.254.170.2', 'link-local'],
    ['https://[fe80::1]/', 'fe80::1', 'link-local'],
    ['https://[::ffff:169.254.169.254]/', '169.254.169.254', 'link-local'],
    ['https://[::ffff:a9fe:a9fe]/', '169.254.169.254', 'link-local'],
    ['https://[64:ff9b::169.254.169.254]/', '64:ff9b::a9fe:a9fe, which embeds 169.254.169.254', 'link-local'],
    ['https://[2002:a9fe:a9fe::1]/', '2002:a9fe:a9fe::1, which embeds 169.254.169.254', 'link-local'],
    ['https://[::169.254.169.254]/', '::a9fe:a9fe, which embeds 169.254.169.254', 'link-local'],
    ['https://metadata.google.internal/computeMetadata/v1/', 'metadata.google.internal', 'metadata'],
    ['https://METADATA.Google.Internal./', 'metadata.google.internal', 'metadata'],
    ['https://metadata/', 'metadata', 'metadata'],
    ['https://instance-data./latest/', 'instance-data', 'metadata'],
    ['https://[fd00:ec2::254]/', 'fd00:ec2::254', 'metadata'],
    ['https://100.100.100.200/', '100.100.100.200', 'metadata'],
    ['https://0.0.0.0/', '0.0.0.0', 'unspecified'],
    ['https://0/', '0.0.0.0', 'unspecified'],
    ['https://[::]/', '::', 'unspecified'],
    ['https://224.0.0.1/', '224.0.0.1', 'multicast'],
    ['https://[ff02::1]/', 'ff02::1', 'multicast'],
    ['https://255.255.255.255/', '255.255.255.255', 'broadcast'],
  ];

  it.each(ALWAYS_REFUSED)('%s, under either policy, unless allow-listed', async (url, shown, kind) => {
    for (const webhookTargets of ['local', 'public'] as const) {
      const sandbox = await createTestSandbox({ webhookTargets });
      const error = expectError(
        await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) }),
        422,
        'invalid_field',
        'url',
      );
      expect(error.message).toContain(`points at ${shown}`);
      expect(error.message).toContain(kind);
      expect(error.message).toContain('never delivers');
      expect(error.message).toContain('--webhook-allow-host');
      expect((await sandbox.call('GET', '/v1/webhooks')).json.data).toEqual([]);
    }
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    const exempt = await createTestSandbox({ webhookTargets: 'public', webhookAllowHosts: [host] });
    expect((await exempt.call('POST', '/v1/webhooks', { body: registerBody(url) })).status).toBe(201);
  });

  it('refuses them when PATCH changes the URL, and keeps the URL it had', async () => {
    const sandbox = await createTestSandbox();
    const hook = await register(sandbox, 'https://shop.example.com/hooks');
    const error = expectError(
      await sandbox.call('PATCH', `/v1/webhooks/${hook.id}`, {
        body: { url: 'https://[::ffff:169.254.169.254]/' },
      }),
      422,
      'invalid_field',
      'url',
    );
    expect(error.message).toContain('169.254.169.254');
    expect((await sandbox.call('GET', `/v1/webhooks/${hook.id}`)).json.url).toBe(
      'https://shop.example.com/hooks',
    );
  });
});

describe('registration under --webhook-targets public', () => {
  const PUBLIC_ONLY: [string, string][] = [
    ['https://127.0.0.1/', 'loopback'],
    ['https://127.1/', 'loopback'],
    ['https://2130706433/', 'loopback'],
    ['https://[::1]/', 'loopback'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://localhost/', 'loopback'],
    ['https://LOCALHOST./', 'loopback'],
    ['https://shop.localhost/', 'loopback'],
    ['https://10.1.2.3/', 'private'],
    ['https://172.16.0.1/', 'private'],
    ['https://172.31.255.254/', 'private'],
    ['https://192.168.1.1/', 'private'],
    ['https://[fc00::1]/', 'private'],
    ['https://[fd12:3456::1]/', 'private'],
    ['https://[::ffff:10.1.2.3]/', 'private'],
    ['https://[64:ff9b::10.1.2.3]/', 'private'],
    ['https://[2002:0a01:0203::1]/', 'private'],
    ['https://100.64.0.1/', 'shared address space'],
    ['https://100.127.255.254/', 'shared address space'],
    ['https://192.0.2.10/', 'reserved'],
    ['https://198.18.0.1/', 'reserved'],
    ['https://240.0.0.1/', 'reserved'],
    ['https://[2001:db8::1]/', 'reserved'],
    ['https://[100::1]/', 'reserved'],
  ];

  it.each(PUBLIC_ONLY)('refuses %s (%s), which the local policy accepts', async (url, kind) => {
    const shared = await createTestSandbox({ webhookTargets: 'public' });
    const error = expectError(
      await shared.call('POST', '/v1/webhooks', { body: registerBody(url) }),
      422,
      'invalid_field',
      'url',
    );
    expect(error.message).toContain(kind);
    expect(error.message).toContain('--webhook-targets public');
    expect(error.message).toContain('--webhook-allow-host');

    const local = await createTestSandbox({ webhookTargets: 'local' });
    expect((await local.call('POST', '/v1/webhooks', { body: registerBody(url) })).status).toBe(201);
  });

  it.each([
    'https://shop.example.com/hooks',
    'https://93.184.215.14/hooks',
    'https://172.32.0.1/',
    'https://100.128.0.1/',
    'https://[2606:4700:4700::1111]/',
    'https://[64:ff9b::93.184.215.14]/',
  ])('accepts %s', async (url) => {
    const sandbox = await createTestSandbox({ webhookTargets: 'public' });
    expect((await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) })).status).toBe(201);
  });

  it('accepts exactly the hosts the operator allow-listed', async () => {
    const sandbox = await createTestSandbox({
      webhookTargets: 'public',
      webhookAllowHosts: ['10.1.2.3', '::1', 'hooks.localhost', '[fd00::7]'],
    });
    for (const url of [
      'https://10.1.2.3/h',
      'https://[::1]:8443/h',
      'https://[0:0::1]/h',
      'https://hooks.localhost./h',
      'https://[fd00:0::7]/h',
    ]) {
      expect((await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) })).status, url).toBe(201);
    }
    for (const url of ['https://10.1.2.4/h', 'https://127.0.0.1/h', 'https://other.localhost/h']) {
      expectError(
        await sandbox.call('POST', '/v1/webhooks', { body: registerBody(url) }),
        422,
        'invalid_field',
        'url',
      );
    }
  });

  it('does not resolve names at registration', async () => {
    const { resolve, asked } = fakeResolver({ 'hooks.test': ['127.0.0.1'] });
    const sandbox = await sandboxWith({ webhookTargets: 'public' }, resolve);
    await register(sandbox, 'https://hooks.test/h');
    expect(asked).toEqual([]);
  });
});

describe('at every attempt, the resolved addresses are checked before connecting', () => {
  it('refuses a name that resolves to loopback under public: nothing is sent, on any path', async () => {
    const target = await receiver();
    const { resolve, asked } = fakeResolver({ 'hooks.test': ['127.0.0.1'] });
    const sandbox = await sandboxWith({ webhookTargets: 'public', allowHttpWebhooks: true }, resolve);
    const url = `http://hooks.test:${target.port}/hooks`;
    const { hook, attempt } = await deliverOnce(sandbox, url);
    expect(asked).toEqual(['hooks.test']);
    expect(attempt).toMatchObject({
      attempt: 0,
      status: 'failed',
      error: 'destination_not_allowed',
      response_status: null,
      response_excerpt: null,
      next_attempt_at: '2026-11-22T08:01:00Z',
    });
    expect(attempt.error_message).toContain('hooks.test resolves to 127.0.0.1');
    expect(attempt.error_message).toContain('loopback');
    expect(attempt.error_message).toContain('--webhook-targets public');

    // The retry, when it falls due, asks again and is refused again.
    await sandbox.call('POST', '/_sandbox/clock/advance', { body: { by: 60 } });
    const retry = (await attemptsOf(sandbox, hook.id)).find((a) => a.attempt === 1);
    expect(retry).toMatchObject({ status: 'failed', error: 'destination_not_allowed' });

    // So is a redelivery.
    const again = await sandbox.call('POST', `/_sandbox/deliveries/${attempt.id}/redeliver`);
    expect(again.json).toMatchObject({
      redelivery: true,
      status: 'failed',
      error: 'destination_not_allowed',
    });

    // And a send resumed after a restart (an attempt left `sending` when the process stopped).
    await sandbox.db.run("UPDATE webhook_attempts SET status = 'sending' WHERE id = ?", [again.json.id]);
    await sandbox.services.delivery.start();
    await sandbox.services.delivery.settled(await defaultAccountId(sandbox));
    const resumed = (await attemptsOf(sandbox, hook.id)).find((a) => a.id === again.json.id);
    expect(resumed).toMatchObject({ status: 'failed', error: 'destination_not_allowed' });

    expect(asked.length).toBe(4);
    expect(target.requests).toHaveLength(0);
  });

  it('delivers to an allow-listed name, connecting to the address it was checked at', async () => {
    const target = await receiver();
    const { resolve, asked } = fakeResolver({ 'hooks.test': ['127.0.0.1'] });
    const sandbox = await sandboxWith(
      { webhookTargets: 'public', allowHttpWebhooks: true, webhookAllowHosts: ['hooks.test'] },
      resolve,
    );
    const { attempt } = await deliverOnce(sandbox, `http://hooks.test:${target.port}/hooks`);
    expect(attempt).toMatchObject({ status: 'succeeded', response_status: 200, error: null });
    expect(asked).toEqual(['hooks.test']);
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]!.headers.host).toBe(`hooks.test:${target.port}`);
  });

  it('refuses the attempt when any one of the addresses is refused', async () => {
    const target = await receiver();
    const { resolve } = fakeResolver({ 'hooks.test': ['127.0.0.1', '169.254.169.254'] });
    const sandbox = await sandboxWith({ allowHttpWebhooks: true }, resolve);
    const { attempt } = await deliverOnce(sandbox, `http://hooks.test:${target.port}/hooks`);
    expect(attempt).toMatchObject({ status: 'failed', error: 'destination_not_allowed' });
    expect(attempt.error_message).toContain('hooks.test resolves to 169.254.169.254');
    expect(attempt.error_message).toContain('link-local');
    expect(target.requests).toHaveLength(0);
  });

  it('resolves again at each attempt, and connects only to what that attempt checked', async () => {
    const target = await receiver();
    // The first answer is where the receiver listens; every later one is an address it does not.
    let answers = 0;
    const { resolve, asked } = fakeResolver({
      'hooks.test': () => (answers++ === 0 ? ['127.0.0.1'] : ['::1']),
    });
    const sandbox = await sandboxWith({ allowHttpWebhooks: true }, resolve);
    const hook = await register(sandbox, `http://hooks.test:${target.port}/hooks`);
    await sandbox.newShipment();
    await advance(sandbox);
    // `hooks.test` is no name the system knows: the request reached the receiver because the
    // connection went to the address the resolver gave, asked once for this attempt.
    expect(asked).toEqual(['hooks.test']);
    expect(target.requests).toHaveLength(1);

    await sandbox.newShipment();
    await advance(sandbox);
    expect(asked).toEqual(['hooks.test', 'hooks.test']);
    expect(target.requests).toHaveLength(1);
    const sent = (await attemptsOf(sandbox, hook.id)).filter((a) => a.status !== 'scheduled');
    expect(sent.map((a) => [a.status, a.error])).toEqual([
      ['failed', 'connection'],
      ['succeeded', null],
    ]);
  });

  it('counts a name that does not resolve as a connection error', async () => {
    const { resolve } = fakeResolver({});
    const sandbox = await sandboxWith({ allowHttpWebhooks: true }, resolve);
    const { attempt } = await deliverOnce(sandbox, 'http://nowhere.test/hooks');
    expect(attempt).toMatchObject({ status: 'failed', error: 'connection', error_message: 'ENOTFOUND' });
  });

  it('verifies TLS for the host name while connecting to the checked address', async () => {
    const target = await receiver([200], { tls: await generateLocalhostCertificate() });
    const { resolve } = fakeResolver({ 'hooks.test': ['127.0.0.1'] });
    const sandbox = await sandboxWith({}, resolve);
    const { attempt } = await deliverOnce(sandbox, `https://hooks.test:${target.port}/hooks`);
    // The handshake reached the receiver on 127.0.0.1 asking for hooks.test, and the certificate
    // (self-signed, and for localhost) was refused: verification is on.
    expect(target.serverNames).toEqual(['hooks.test']);
    expect(attempt).toMatchObject({ status: 'failed', error: 'connection' });
    expect(attempt.error_message).toMatch(/CERT|certificate/i);
    expect(target.requests).toHaveLength(0);
  });
});

describe('what is read of an answer', () => {
  it.each([301, 302, 303, 307, 308])(
    'follows no redirect (%i): the attempt fails and the target gets nothing',
    async (status) => {
      const elsewhere = await receiver();
      const moved = await receiver([{ status, headers: { location: elsewhere.url } }]);
      const sandbox = await sandboxWith();
      const { attempt } = await deliverOnce(sandbox, moved.url);
      expect(attempt).toMatchObject({ status: 'failed', error: 'http', response_status: status });
      expect(attempt.error_message).toContain('redirects are not followed');
      expect(moved.requests).toHaveLength(1);
      expect(elsewhere.requests).toHaveLength(0);
    },
  );

  it('stops reading a 100 MiB answer after 64 KiB and keeps its first 1 KiB', async () => {
    const total = 100 * 1024 * 1024;
    const flood = await startFloodingReceiver(total);
    cleanups.push(() => flood.close());
    const sandbox = await sandboxWith();
    const { attempt } = await deliverOnce(sandbox, flood.url);
    expect(attempt).toMatchObject({ status: 'succeeded', response_status: 200, error: null });
    expect(attempt.response_excerpt).toBe('a'.repeat(1024));
    // The sandbox closed the connection: the receiver could write no more than what fits in the
    // sockets' buffers on the way, far from the whole answer.
    const { written, complete } = await flood.outcome;
    expect(complete).toBe(false);
    expect(written).toBeLessThan(total / 4);
  });

  it('keeps whole characters in the excerpt', async () => {
    const target = await receiver([{ status: 500, body: `x${'é'.repeat(2000)}` }]);
    const sandbox = await sandboxWith();
    const { attempt } = await deliverOnce(sandbox, target.url);
    expect(attempt).toMatchObject({ status: 'failed', error: 'http', response_status: 500 });
    // 1 + 511 × 2 bytes: the 512th "é" would straddle the 1 KiB mark.
    expect(attempt.response_excerpt).toBe(`x${'é'.repeat(511)}`);
  });

  it.each([
    ['hangs', 'hang', null],
    ['trickles its answer', 'trickle', 200],
  ] as const)('counts a receiver that %s past the timeout as a timeout', async (_how, reply, status) => {
    const target = await receiver([reply]);
    const sandbox = await sandboxWith({ webhookTimeoutMs: 300 });
    const { attempt } = await deliverOnce(sandbox, target.url);
    expect(attempt).toMatchObject({
      status: 'failed',
      error: 'timeout',
      error_message: 'no answer within 300 ms',
      response_status: status,
      next_attempt_at: '2026-11-22T08:01:00Z',
    });
  });
});

describe("each account's share of the senders", () => {
  it.each(['hang', 'trickle'] as const)(
    "delivers another account's event while one account's receivers all %s",
    async (reply) => {
      const RECEIVERS = 16;
      const EVENTS = 5;
      // Long enough that nothing of the stuck account times out while the test runs.
      const sandbox = await createTestSandbox({ webhookTimeoutMs: 120_000 });
      const freeze = (key: string) =>
        sandbox.call('POST', '/_sandbox/clock', { key, body: { frozen: true } });

      const stuckKey = await sandbox.newAccount();
      await freeze(stuckKey);
      const stuck: Receiver[] = [];
      const stuckHooks: string[] = [];
      for (let i = 0; i < RECEIVERS; i++) {
        const target = await receiver([reply]);
        stuck.push(target);
        stuckHooks.push((await register(sandbox, target.url, stuckKey)).id);
      }
      for (let i = 0; i < EVENTS; i++) await sandbox.newShipment({}, stuckKey);

      const healthyKey = await sandbox.newAccount();
      await freeze(healthyKey);
      const healthy = await receiver([204]);
      const healthyHook = await register(sandbox, healthy.url, healthyKey);
      await sandbox.newShipment({}, healthyKey);

      // The stuck account's deliveries go out, and its advance waits for them to end.
      const onTheWire = requestsReaching(stuck, 16);
      const stuckAdvance = advance(sandbox, stuckKey);
      await onTheWire;

      const healthyAdvance = await advance(sandbox, healthyKey);
      expect(healthyAdvance.status).toBe(200);
      expect(healthy.requests).toHaveLength(1);
      expect((await attemptsOf(sandbox, healthyHook.id, healthyKey))[0]).toMatchObject({
        status: 'succeeded',
        response_status: 204,
      });

      // Meanwhile every one of the stuck account's sends is still held: 16 on the wire (its share),
      // the rest waiting for it, none timed out.
      const stuckAttempts = (
        await Promise.all(stuckHooks.map((id) => attemptsOf(sandbox, id, stuckKey)))
      ).flat();
      expect(stuckAttempts).toHaveLength(RECEIVERS * EVENTS);
      expect(new Set(stuckAttempts.map((a) => a.status))).toEqual(new Set(['sending']));
      expect(stuck.reduce((sum, target) => sum + target.requests.length, 0)).toBe(16);

      for (const target of stuck) {
        target.reply([200]);
        target.release();
      }
      expect((await stuckAdvance).status).toBe(200);
      for (const target of stuck) expect(target.requests).toHaveLength(EVENTS);
      const settled = (await Promise.all(stuckHooks.map((id) => attemptsOf(sandbox, id, stuckKey)))).flat();
      expect(new Set(settled.map((a) => a.status))).toEqual(new Set(['succeeded']));
    },
  );
});

describe('the delivery log keeps refused destinations across an upgrade', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('migrates a schema 9 attempts table: rows, order, indexes, and the new error kind', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-destinations-'));
    dirs.push(dir);
    const file = join(dir, 'sandbox.db');
    const old = new Database(file);
    for (const migration of LEGACY_MIGRATIONS.slice(0, 9)) old.exec(migration);
    old.pragma('user_version = 9');
    old.exec(`
      INSERT INTO accounts (id, name, plan, created_at, clock_anchor_real, clock_anchor_virtual, clock_speed)
        VALUES ('acct_1', 'A', 'growth', 0, 0, 0, 1);
      INSERT INTO webhooks (id, account_id, url, events, secret, status, created_at)
        VALUES ('wh_1', 'acct_1', 'https://shop.example.com/h', '["shipment.created"]', 'secret', 'active', 0);
      INSERT INTO events (id, account_id, type, created_at, body) VALUES ('evt_1', 'acct_1', 'shipment.created', 0, '{}');
    `);
    const insert = old.prepare(
      `INSERT INTO webhook_attempts (id, account_id, webhook_id, event_id, event_type, attempt, status, scheduled_at,
         response_status, response_excerpt, error, error_message)
       VALUES (?, 'acct_1', 'wh_1', 'evt_1', 'shipment.created', ?, ?, ?, ?, ?, ?, ?)`,
    );
    insert.run('dlv_1', 0, 'failed', 1000, 500, 'no', 'http', 'the receiver answered 500');
    insert.run('dlv_2', 1, 'succeeded', 2000, 200, 'ok', null, null);
    insert.run('dlv_3', 2, 'scheduled', 3000, null, null, null, null);
    old.prepare("DELETE FROM webhook_attempts WHERE id = 'dlv_3'").run();
    const before = old.prepare('SELECT * FROM webhook_attempts ORDER BY seq').all();
    const indexes = (db: Database.Database) =>
      db
        .prepare(
          "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'webhook_attempts' ORDER BY name",
        )
        .all();
    const indexesBefore = indexes(old);
    old.close();

    const db = openMigratedDatabase(file);
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(LEGACY_MIGRATIONS.length + 1);
      // Every row as it was (later migrations may add columns of their own beside them).
      expect(db.prepare('SELECT * FROM webhook_attempts ORDER BY seq').all()).toEqual(
        before.map((row) => expect.objectContaining(row as object)),
      );
      // Every index as it was, and the one a later migration adds.
      const indexesAfter = indexes(db) as { name: string }[];
      expect(indexesAfter.filter((index) => index.name !== 'webhook_attempts_due_by_webhook')).toEqual(
        indexesBefore,
      );
      expect(indexesAfter.map((index) => index.name)).toContain('webhook_attempts_due_by_webhook');
      expect(indexesBefore.map((index: any) => index.name)).toEqual(
        expect.arrayContaining([
          'webhook_attempts_by_event',
          'webhook_attempts_by_status',
          'webhook_attempts_by_webhook',
          'webhook_attempts_due',
        ]),
      );
      const add = db.prepare(
        `INSERT INTO webhook_attempts (id, account_id, webhook_id, event_id, event_type, attempt, status, scheduled_at, error)
         VALUES (?, 'acct_1', 'wh_1', 'evt_1', 'shipment.created', 3, 'failed', 4000, ?)`,
      );
      add.run('dlv_4', 'destination_not_allowed');
      // A deleted attempt's seq is not handed out again: the log's order stays the order of planning.
      expect(db.prepare("SELECT seq FROM webhook_attempts WHERE id = 'dlv_4'").pluck().get()).toBe(4);
      expect(() => add.run('dlv_5', 'teapot')).toThrow(/CHECK constraint/);
      expect(db.pragma('foreign_key_check')).toEqual([]);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
  });
});

/** Resolves once the receivers together have received `count` requests. */
function requestsReaching(receivers: Receiver[], count: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      const seen = receivers.reduce((sum, target) => sum + target.requests.length, 0);
      if (seen >= count) resolve();
      else void Promise.race(receivers.map((target) => target.nextRequest())).then(check);
    };
    check();
  });
}

async function defaultAccountId(sandbox: TestSandbox): Promise<string> {
  return (await sandbox.stores.accounts.findByKey(sandbox.db, DEFAULT_KEY))!.account.id;
}

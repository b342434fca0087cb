import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../src/config/index.js';
import { isDiskFull, storageFailure } from '../src/core/storage-errors.js';
import { formatTimestamp, MINUTE } from '../src/core/time.js';
import type { Db } from '../src/db/database.js';
import { sqliteDatabase } from '../src/db/sqlite.js';
import { loadScenarios, scenarioDirectories } from '../src/scenarios/files.js';
import { createSandbox } from '../src/wiring.js';
import {
  capturingLogger,
  DEFAULT_KEY,
  expectError,
  openMigratedDatabase,
  PARCEL,
  shipmentRequest,
  US_DESTINATION,
  US_ORIGIN,
} from './helpers.js';

/** The log's line a request, a scheduled step and a delivery attempt (src/logger.ts). */
const ROUTINE_LINES = ['request', 'step', 'delivery'];

const T0 = Date.UTC(2026, 10, 22, 8, 0, 0);
const SCENARIOS = loadScenarios(scenarioDirectories(undefined));
const BACKING_OFF =
  'background work is backing off: the disk is full; it resumes by itself once writing works again';
const RESUMED = 'background work resumed: writing works again';
const SECRET = 'whsec_0123456789abcdef';

const dirs: string[] = [];
const sandboxes: { close(): Promise<void> }[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const sandbox of sandboxes.splice(0)) await sandbox.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The whole app over a SQLite database file (a full disk needs one), called in-process; `db` is its
 * better-sqlite3 connection. The wall clock is moved by hand. The background timers are not started
 * unless a test starts them.
 */
async function fileSandbox(dir = mkdtempSync(join(tmpdir(), 'sandbox-disk-full-'))) {
  dirs.push(dir);
  const file = join(dir, 'sandbox.db');
  const db = openMigratedDatabase(file);
  const wall = { now: T0 };
  const { logger, lines } = capturingLogger();
  const sandbox = await createSandbox({
    database: sqliteDatabase(db, file),
    config: testConfig(),
    logger,
    scenarios: SCENARIOS,
    realNow: () => wall.now,
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await sandbox.stop();
    db.close();
  };
  sandboxes.push({ close });

  async function call(method: string, path: string, options: { key?: string | null; body?: unknown } = {}) {
    const headers: Record<string, string> = {};
    const key = options.key === undefined ? DEFAULT_KEY : options.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const response = await sandbox.app.request(path, { method, headers, body });
    const text = await response.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, json, text };
  }

  /** What was logged, but the line of each request, step and delivery attempt. */
  const messages = () =>
    lines.map((line) => line.msg as string).filter((message) => !ROUTINE_LINES.includes(message));
  const count = (sql: string, ...params: unknown[]) =>
    db
      .prepare(sql)
      .pluck()
      .get(...params) as number;
  return { ...sandbox, db, wall, logLines: lines, messages, call, count, close };
}

/**
 * From now on the database may not grow by a single page: SQLite answers SQLITE_FULL to any write
 * that needs one, exactly as it does on a full disk. (Writes that fit in the pages it has still
 * succeed, which a full disk would refuse too; the tests below make sure theirs do not fit.)
 */
function fillDisk(db: Db): void {
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`);
}

function freeSpace(db: Db): void {
  db.pragma('max_page_count = 1000000000');
}

/**
 * Fills the page holding a row to the last byte: `grow` sets a text of the given length on a filler
 * row in that page, and the longest that still fits is kept. Any write that grows that page afterwards
 * needs a new page, and there is none.
 */
function fillPage(db: Db, grow: (length: number) => void): void {
  fillDisk(db);
  let fits = 0;
  let tooLong = 8192;
  while (tooLong - fits > 1) {
    const length = Math.floor((fits + tooLong) / 2);
    try {
      grow(length);
      fits = length;
    } catch (error) {
      expect((error as { code?: string }).code).toBe('SQLITE_FULL');
      tooLong = length;
    }
  }
  grow(fits);
}

function created(response: { status: number; json: any }) {
  expect(response.status).toBe(201);
  return response.json;
}

/** Makes the same write until the disk refuses it; answers how many succeeded and the refusal. */
async function writeUntilRefused<R extends { status: number }>(write: () => Promise<R>) {
  for (let written = 0; written < 1000; written++) {
    const response = await write();
    if (response.status === 507) return { written, refusal: response };
    expect(response.status).toBe(201);
  }
  throw new Error('the database never filled up');
}

describe('telling failures apart', () => {
  it('knows a full disk, a busy database and a bug by the errors SQLite really raises', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-errors-'));
    dirs.push(dir);
    const db = openMigratedDatabase(join(dir, 'sandbox.db'));
    const other = new Database(join(dir, 'sandbox.db'), { timeout: 0 });
    try {
      db.pragma('busy_timeout = 0');
      const raised = (write: () => unknown) => {
        try {
          write();
        } catch (error) {
          return error;
        }
        throw new Error('the write succeeded');
      };
      fillDisk(db);
      const full = raised(() =>
        db.prepare('INSERT INTO settings VALUES (?, ?)').run('big', 'x'.repeat(65536)),
      );
      freeSpace(db);
      other.exec('BEGIN IMMEDIATE');
      const busy = raised(() => db.prepare('INSERT INTO settings VALUES (?, ?)').run('small', 'x'));
      other.exec('ROLLBACK');
      db.prepare('INSERT INTO settings VALUES (?, ?)').run('twice', 'x');
      const constraint = raised(() => db.prepare('INSERT INTO settings VALUES (?, ?)').run('twice', 'x'));

      expect([full, busy, constraint].map(storageFailure)).toEqual(['full', 'busy', undefined]);
      expect([full, busy, constraint].map(isDiskFull)).toEqual([true, false, false]);
      expect([new Error('boom'), undefined, null, { code: 'ENOSPC' }].map(storageFailure)).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    } finally {
      other.close();
      db.close();
    }
  });
});

describe('on a full disk', () => {
  it('answers every authenticated read, and reads write nothing, not even when a key was last used', async () => {
    const s = await fileSandbox();
    const shipment = created(await s.call('POST', '/v1/shipments', { body: shipmentRequest() }));
    const label = created(await s.call('POST', '/v1/labels', { body: { shipment_id: shipment.id } }));
    const webhook = created(
      await s.call('POST', '/v1/webhooks', {
        body: { url: 'https://shop.example.com/hooks', events: ['tracking.delivered'], secret: SECRET },
      }),
    );
    const readOnly = created(
      await s.call('POST', '/_sandbox/keys', { body: { name: 'ci', scopes: ['shipments:read'] } }),
    );
    fillDisk(s.db);
    await writeUntilRefused(() => s.call('POST', '/v1/shipments', { body: shipmentRequest() }));

    // Ten minutes later (the account's clock runs with the wall's), everything is read again.
    s.wall.now += 10 * MINUTE;
    const changesBefore = s.count('SELECT total_changes()');
    const reads: [string, string, unknown?][] = [
      ['GET', '/v1/shipments'],
      ['GET', `/v1/shipments/${shipment.id}`],
      ['GET', `/v1/labels/${label.id}`],
      ['GET', `/v1/labels/${label.id}/download`],
      ['GET', `/v1/tracking/${label.tracking_number}`],
      ['GET', '/v1/webhooks'],
      ['GET', `/v1/webhooks/${webhook.id}`],
      ['POST', '/v1/rates', { from: US_ORIGIN, to: US_DESTINATION, parcel: PARCEL }],
      ['GET', '/_sandbox/clock'],
      ['GET', '/_sandbox/events'],
      ['GET', `/_sandbox/webhooks/${webhook.id}/deliveries`],
      ['GET', '/_sandbox/emails'],
      ['GET', '/_sandbox/requests'],
      ['GET', '/_sandbox/scenarios'],
      ['GET', '/_sandbox/account'],
      ['GET', '/_sandbox/faults'],
      ['GET', '/_sandbox/keys'],
    ];
    const statuses = [];
    for (const [method, path, body] of reads)
      statuses.push([path, (await s.call(method, path, { body })).status]);
    statuses.push([
      'with the read-only key',
      (await s.call('GET', '/v1/shipments', { key: readOnly.value })).status,
    ]);
    expect(statuses).toEqual([...reads.map(([, path]) => [path, 200]), ['with the read-only key', 200]]);
    expect(s.count('SELECT total_changes()')).toBe(changesBefore);

    // The keys' last-used times are the fresh ones from memory; their rows have not been written.
    const keys = (await s.call('GET', '/_sandbox/keys')).json.data as { id: string; last_used_at: string }[];
    const lastUsed = Object.fromEntries(keys.map((key) => [key.id, key.last_used_at]));
    const defaultKeyId = keys.at(-1)?.id as string;
    expect(lastUsed).toEqual({
      [defaultKeyId]: formatTimestamp(s.wall.now),
      [readOnly.id]: formatTimestamp(s.wall.now),
    });
    expect(s.count('SELECT count(*) FROM api_keys WHERE last_used_at IS NOT NULL')).toBe(0);

    // Written in the background once there is room (here: at shutdown, before the database closes).
    freeSpace(s.db);
    await s.stop();
    const rows = s.db.prepare('SELECT id, last_used_at FROM api_keys').all() as {
      id: string;
      last_used_at: number;
    }[];
    expect(Object.fromEntries(rows.map((row) => [row.id, row.last_used_at]))).toEqual({
      [defaultKeyId]: s.wall.now,
      [readOnly.id]: s.wall.now,
    });
  });

  it('refuses a write with 507 and the contract body, leaves no part of it, and takes it again once there is room', async () => {
    const s = await fileSandbox();
    fillDisk(s.db);
    const { written, refusal } = await writeUntilRefused(() =>
      s.call('POST', '/v1/shipments', { body: shipmentRequest() }),
    );
    const error = expectError(refusal, 507, 'insufficient_storage');
    expect(error.message).toBe(
      "The sandbox's disk is full, so nothing was changed. Retry once space has been freed.",
    );
    // The same write again: no room still, and still nothing of it is left behind.
    expectError(
      await s.call('POST', '/v1/shipments', { body: shipmentRequest() }),
      507,
      'insufficient_storage',
    );
    expect(s.count('SELECT count(*) FROM shipments')).toBe(written);
    expect(s.count("SELECT count(*) FROM events WHERE type = 'shipment.created'")).toBe(written);
    expect(s.count('SELECT coalesce(sum(n), 0) FROM shipment_counts')).toBe(written);
    expect((await s.call('GET', '/v1/shipments?limit=1')).json.meta.total).toBe(written);

    // A new account is written with its key, or not at all.
    const accountsBefore = s.count('SELECT count(*) FROM accounts');
    const accounts = await writeUntilRefused(() =>
      s.call('POST', '/_sandbox/accounts', { key: null, body: {} }),
    );
    expectError(accounts.refusal, 507, 'insufficient_storage');
    expect(s.count('SELECT count(*) FROM accounts')).toBe(accountsBefore + accounts.written);
    expect(
      s.count(
        'SELECT count(*) FROM accounts a WHERE NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.account_id = a.id)',
      ),
    ).toBe(0);

    // Every refusal was a 507, and the log said so once rather than once per request.
    expect(s.messages().filter((message) => message === 'unexpected error')).toEqual([]);
    expect(s.messages().filter((message) => message.includes('the disk is full'))).toEqual([
      'the disk is full: writes are answered 507 until space is freed',
    ]);

    freeSpace(s.db);
    expect((await s.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);
    expect((await s.call('POST', '/_sandbox/accounts', { key: null, body: {} })).status).toBe(201);
  });

  it("keeps keys' last-used times while they cannot be written, says so once, and writes them once there is room", async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const s = await fileSandbox();
    const accountId = s.db.prepare('SELECT account_id FROM api_keys').pluck().get() as string;
    // A second key's name grown until the keys' page is full: a last-used time needs a few bytes more.
    s.db
      .prepare(
        `INSERT INTO api_keys (id, account_id, name, key_hash, last4, scopes, created_at)
         VALUES ('key_filler', ?, '', 'filler', 'fill', '[]', 0)`,
      )
      .run(accountId);
    const rename = s.db.prepare("UPDATE api_keys SET name = ? WHERE id = 'key_filler'");
    fillPage(s.db, (length) => rename.run('n'.repeat(length)));
    const lastUsedRow = () => s.count("SELECT last_used_at FROM api_keys WHERE id != 'key_filler'");

    s.services.accounts.start();
    expect((await s.call('GET', '/v1/shipments')).status).toBe(200);
    const usedAt = s.wall.now;
    // Six flushes of five seconds: each fails, the time stays in memory, one line says so.
    await vi.advanceTimersByTimeAsync(30_000);
    expect(lastUsedRow()).toBeNull();
    expect(s.messages()).toEqual([
      "writing keys' last-used times is backing off: the disk is full; it resumes by itself once writing works again",
    ]);
    const listed = (await s.call('GET', '/_sandbox/keys')).json.data as { last_used_at: string | null }[];
    expect(listed.map((key) => key.last_used_at)).toContain(formatTimestamp(usedAt));

    freeSpace(s.db);
    await vi.advanceTimersByTimeAsync(5000);
    expect(lastUsedRow()).toBe(usedAt);
    expect(s.messages()).toEqual([
      "writing keys' last-used times is backing off: the disk is full; it resumes by itself once writing works again",
      "writing keys' last-used times resumed: writing works again",
    ]);
  });

  it('keeps a webhook outcome it cannot write, sends nothing twice, backs off, and writes it once there is room', async () => {
    const s = await fileSandbox();
    const receiver = await heldReceiver();
    try {
      await s.call('POST', '/_sandbox/clock', { body: { frozen: true } });
      const webhook = created(
        await s.call('POST', '/v1/webhooks', {
          body: { url: receiver.url, events: ['shipment.created'], secret: SECRET },
        }),
      );
      created(await s.call('POST', '/v1/shipments', { body: shipmentRequest() }));
      const deliveries = async () =>
        (await s.call('GET', `/_sandbox/webhooks/${webhook.id}/deliveries`)).json.data as any[];

      // The advance sends the delivery; while the receiver holds its answer, the disk fills up.
      const advancing = s.call('POST', '/_sandbox/clock/advance', { body: { by: '1s' } });
      const held = await receiver.nextRequest();
      const attempt = s.db
        .prepare("SELECT account_id, webhook_id, event_id FROM webhook_attempts WHERE status = 'sending'")
        .get() as { account_id: string; webhook_id: string; event_id: string };
      s.db
        .prepare(
          `INSERT INTO webhook_attempts (id, account_id, webhook_id, event_id, attempt, status, scheduled_at, error_message)
           VALUES ('dlv_filler', ?, ?, ?, 99, 'cancelled', 0, '')`,
        )
        .run(attempt.account_id, attempt.webhook_id, attempt.event_id);
      const grow = s.db.prepare("UPDATE webhook_attempts SET error_message = ? WHERE id = 'dlv_filler'");
      fillPage(s.db, (length) => grow.run('x'.repeat(length)));
      held.respond(500);

      // The outcome (a failure, and the retry it schedules) has no room: the advance cannot finish.
      expectError(await advancing, 507, 'insufficient_storage');
      expect((await deliveries()).filter((d) => d.id !== 'dlv_filler').map((d) => d.status)).toEqual([
        'sending',
      ]);

      // Neither advances nor the background timer send it again or flood the log while the disk is full.
      for (let i = 0; i < 3; i++) {
        expectError(
          await s.call('POST', '/_sandbox/clock/advance', { body: { by: '1m' } }),
          507,
          'insufficient_storage',
        );
      }
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      await s.scheduler.start();
      await vi.advanceTimersByTimeAsync(2 * MINUTE);
      expect(receiver.requests()).toBe(1);
      expect((await deliveries()).filter((d) => d.id !== 'dlv_filler').map((d) => d.status)).toEqual([
        'sending',
      ]);
      expect(s.messages()).toEqual([
        BACKING_OFF,
        'the disk is full: writes are answered 507 until space is freed',
      ]);

      // Space is freed: the background timer writes the outcome by itself, without a restart.
      freeSpace(s.db);
      await vi.advanceTimersByTimeAsync(30_000);
      const [first, retry] = (await deliveries()).filter((d) => d.id !== 'dlv_filler').reverse();
      expect(first).toMatchObject({ attempt: 0, status: 'failed', response_status: 500 });
      expect(retry).toMatchObject({ attempt: 1, status: 'scheduled' });
      expect(s.messages()).toContain(RESUMED);
      await s.scheduler.stop();
      vi.useRealTimers();

      // And the retry goes out a minute later on the account's clock, as if nothing had happened.
      receiver.answer(200);
      const resumed = await s.call('POST', '/_sandbox/clock/advance', { body: { by: '1m' } });
      expect(resumed.status).toBe(200);
      expect(receiver.requests()).toBe(2);
      expect((await deliveries()).filter((d) => d.id !== 'dlv_filler').map((d) => d.status)).toEqual([
        'succeeded',
        'failed',
      ]);
      expect(s.messages()).toEqual([
        BACKING_OFF,
        'the disk is full: writes are answered 507 until space is freed',
        RESUMED,
      ]);
    } finally {
      await receiver.close();
    }
  });
});

/**
 * A local webhook receiver that holds each request until the test answers it (`answer` makes it
 * answer at once from then on), so that the disk can fill while a send is on the wire.
 */
async function heldReceiver() {
  let count = 0;
  let immediate: number | undefined;
  const waiting: ((request: { respond(status: number): void }) => void)[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      const respond = (status: number) => {
        open.delete(res);
        res.writeHead(status, { 'content-type': 'text/plain' }).end(`receiver says ${status}`);
      };
      if (immediate !== undefined) return respond(immediate);
      open.add(res);
      for (const waiter of waiting.splice(0)) waiter({ respond });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests: () => count,
    nextRequest: () => new Promise<{ respond(status: number): void }>((resolve) => waiting.push(resolve)),
    answer(status: number) {
      immediate = status;
    },
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A real full disk, where the operating system allows this process to make one: a small tmpfs
 * filled to the last block. It needs root and `mount`; elsewhere these tests are skipped (the
 * max_page_count ones above stand for them).
 */
function mountSmallDisk(): string | undefined {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

function unmount(dir: string): void {
  execFileSync('umount', [dir], { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
}

/** Tried once when the file loads, and unmounted at once: the tests mount their own only when they run. */
const canMountSmallDisk = (() => {
  const probe = mountSmallDisk();
  if (probe) unmount(probe);
  return probe !== undefined;
})();

describe.skipIf(!canMountSmallDisk)('on a really full disk (tmpfs)', () => {
  let root = '';
  let fillerPath = '';
  beforeAll(() => {
    const mounted = mountSmallDisk();
    if (!mounted) throw new Error('a tmpfs could be mounted a moment ago, but not now');
    root = mounted;
    fillerPath = join(root, 'filler');
  });
  afterAll(() => {
    if (root) unmount(root);
  });

  /** Writes a file until the disk has no block left. */
  function fillUp(): void {
    const fd = openSync(fillerPath, 'w');
    const block = Buffer.alloc(64 * 1024);
    try {
      for (;;) writeSync(fd, block);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      closeSync(fd);
    }
  }

  it('reads, refuses writes with 507, keeps last-used times, and takes writes again once space is freed', async () => {
    const dir = join(root, 'data');
    mkdirSync(dir);
    const s = await fileSandbox(dir);
    const shipment = created(await s.call('POST', '/v1/shipments', { body: shipmentRequest() }));
    fillUp();
    try {
      s.wall.now += MINUTE;
      expect((await s.call('GET', `/v1/shipments/${shipment.id}`)).status).toBe(200);
      expect((await s.call('GET', '/v1/shipments')).json.meta.total).toBe(1);
      expectError(
        await s.call('POST', '/v1/shipments', { body: shipmentRequest() }),
        507,
        'insufficient_storage',
      );
      expectError(
        await s.call('POST', '/_sandbox/clock', { body: { frozen: true } }),
        507,
        'insufficient_storage',
      );
      // Even an update in place is refused on a really full disk; the last-used time stays in memory.
      await s.services.accounts.close();
      expect(s.count('SELECT last_used_at FROM api_keys')).toBeNull();
      const keys = (await s.call('GET', '/_sandbox/keys')).json.data as { last_used_at: string }[];
      expect(keys[0]?.last_used_at).toBe(formatTimestamp(s.wall.now));
      expect(s.messages()).toContain(
        "writing keys' last-used times is backing off: the disk is full; it resumes by itself once writing works again",
      );
    } finally {
      unlinkSync(fillerPath);
    }
    expect((await s.call('POST', '/v1/shipments', { body: shipmentRequest() })).status).toBe(201);
    await s.services.accounts.close();
    expect(s.count('SELECT last_used_at FROM api_keys')).toBe(s.wall.now);
    await s.close();
  });
});
